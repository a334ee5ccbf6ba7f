// Issue 35's lever "the softmax and the loss fused": one replica's in-batch InfoNCE tail (the
// scores S = (f/τ)ᵀ g, the loss, P = softmax, ∂L/∂S = (P − I)/B and the two backward products
// g (∂L/∂S)ᵀ, f ∂L/∂S) three ways, for benchmarks/fused_loss.py: as the compiled step issues it
// (ATen calls, native_step.cpp), fused row by row without a B × B matrix (the scores, the
// exponentials and the gradient of one row stay in L1), and in part (BLAS's products, one pass
// per row for the rest). A measurement, not a training path: its exp is Cephes' polynomial, not
// torch's, and its sums run in another order, so its numbers agree with the step's to float32
// rounding only (tests/unit/test_fused_loss.py).
#include <torch/extension.h>

#include <cmath>
#include <cstring>
#include <ctime>
#include <vector>

using at::Tensor;

namespace {

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));

// exp(x) on 16 lanes for x <= 0 (clamped at -87: e^-87 is float32's smallest normal order)
vf vexp_neg(vf x) {
  const vf lo = x - x - 87.0f;
  x = x < lo ? lo : x;
  vf t = x * 1.44269504088896341f + 0.5f;
  vi it = __builtin_convertvector(t, vi);
  vf ft = __builtin_convertvector(it, vf);
  it = it + (vi)(t < ft);  // floor for negative t (the mask is -1 where truncation rounded up)
  vf fn = __builtin_convertvector(it, vf);
  vf r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  vf p = r * 1.9875691500E-4f + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  vf y = p * r * r + r + 1.0f;
  vi bits = (it + 127) << 23;
  return y * (vf)bits;
}

vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
float hsum(vf v) {
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += v[l];
  return s;
}
float hmax(vf v) {
  float s = v[0];
  for (int l = 1; l < 16; ++l) s = v[l] > s ? v[l] : s;
  return s;
}

// one row of logits z (B) in place: exp(z - max)·r with r = 1/(Σ·B), minus 1/B at the
// diagonal i; returns the row's lse - z_i
double row_grad(float* z, int B, int i) {
  vf mx = load(z);
  for (int j = 16; j < B; j += 16) {
    vf v = load(z + j);
    mx = v > mx ? v : mx;
  }
  const float m = hmax(mx), zii = z[i], inv_b = 1.0f / B;
  vf acc = mx - mx;
  for (int j = 0; j < B; j += 16) {
    vf v = vexp_neg(load(z + j) - m);
    store(z + j, v);
    acc += v;
  }
  const float s = hsum(acc);
  const float r = (1.0f / s) * inv_b;
  for (int j = 0; j < B; j += 16) store(z + j, load(z + j) * r);
  z[i] -= inv_b;
  return static_cast<double>(m + std::log(s) - zii);
}

double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

}  // namespace

// as the compiled step issues it (native_step.cpp's info_nce and its inner-score branch)
std::vector<Tensor> aten_tail(const Tensor& ft, const Tensor& gt, double tau) {
  at::NoGradGuard no_grad;
  const int64_t B = ft.size(1);
  Tensor a = at::mul(ft, 1.0 / tau);
  Tensor logits = at::mm(a.t(), gt);
  Tensor p = at::softmax(logits, 1);
  Tensor row_max = logits.amax(1);
  Tensor lse = at::sub(row_max, at::log(p.amax(1)));
  Tensor loss = at::mul(at::sub(lse, logits.diagonal()).mean(0, true), tau);
  p.diagonal().sub_(1.0);
  p.mul_(1.0 / B);
  return {loss, at::mm(gt, p.t()), at::mm(ft, p)};
}

// fused row by row: no B × B matrix (ft, gt: (D, B) contiguous float32, B % 16 == 0)
std::vector<Tensor> fused_tail(const Tensor& ft, const Tensor& gt, double tau) {
  const int D = ft.size(0), B = ft.size(1);
  TORCH_CHECK(ft.dim() == 2 && gt.sizes() == ft.sizes(), "f and g: (D, B) both");
  TORCH_CHECK(ft.scalar_type() == at::kFloat && gt.scalar_type() == at::kFloat, "float32");
  TORCH_CHECK(B % 16 == 0 && ft.is_contiguous() && gt.is_contiguous(), "B % 16, contiguous");
  Tensor df = at::empty({D, B}, ft.options()), dg = at::zeros({D, B}, ft.options());
  const float* f = ft.data_ptr<float>();
  const float* g = gt.data_ptr<float>();
  float* pdf = df.data_ptr<float>();
  float* pdg = dg.data_ptr<float>();
  const float inv_tau = static_cast<float>(1.0 / tau);
  std::vector<float> row(B);
  float* z = row.data();
  double loss = 0.0;
  for (int i = 0; i < B; ++i) {
    const float a0 = f[i] * inv_tau;
    for (int j = 0; j < B; j += 16) store(z + j, load(g + j) * a0);
    for (int k = 1; k < D; ++k) {
      const float ak = f[k * B + i] * inv_tau;
      const float* gk = g + k * B;
      for (int j = 0; j < B; j += 16) store(z + j, load(z + j) + load(gk + j) * ak);
    }
    loss += row_grad(z, B, i);
    for (int k = 0; k < D; ++k) {
      const float* gk = g + k * B;
      float* dgk = pdg + k * B;
      const float fk = f[k * B + i];
      vf dot = load(z) * 0.0f;
      for (int j = 0; j < B; j += 16) {
        vf e = load(z + j);
        dot += load(gk + j) * e;
        store(dgk + j, load(dgk + j) + e * fk);
      }
      pdf[k * B + i] = hsum(dot);
    }
  }
  return {at::full({1}, tau * loss / B, ft.options()), df, dg};
}

// in part: BLAS's three products, one pass per row of S for the softmax, loss and (P − I)/B
std::vector<Tensor> partial_tail(const Tensor& ft, const Tensor& gt, double tau) {
  at::NoGradGuard no_grad;
  const int B = ft.size(1);
  TORCH_CHECK(B % 16 == 0 && ft.scalar_type() == at::kFloat, "B % 16, float32");
  Tensor p = at::mm(at::mul(ft, 1.0 / tau).t(), gt).contiguous();  // logits, then ∂L/∂S in place
  float* P = p.data_ptr<float>();
  double loss = 0.0;
  for (int i = 0; i < B; ++i) loss += row_grad(P + static_cast<int64_t>(i) * B, B, i);
  return {at::full({1}, tau * loss / B, ft.options()), at::mm(gt, p.t()), at::mm(ft, p)};
}

// CPU seconds per call of aten_tail, fused_tail and partial_tail: ``blocks`` blocks of ``reps``
// calls of each in turn, the best block of each
std::vector<double> time_tails(const Tensor& ft, const Tensor& gt, double tau, int64_t reps,
                               int64_t blocks) {
  std::vector<double> best(3, 1e9);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int w = 0; w < 3; ++w) {
      const double t = cpu_s();
      for (int64_t r = 0; r < reps; ++r) {
        if (w == 0) aten_tail(ft, gt, tau);
        else if (w == 1) fused_tail(ft, gt, tau);
        else partial_tail(ft, gt, tau);
      }
      best[w] = std::min(best[w], (cpu_s() - t) / reps);
    }
  }
  return best;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("aten_tail", &aten_tail);
  m.def("fused_tail", &fused_tail);
  m.def("partial_tail", &partial_tail);
  m.def("time_tails", &time_tails);
}
