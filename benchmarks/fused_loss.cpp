// Issue 35's lever "the softmax and the loss fused": one replica's in-batch InfoNCE tail (the
// scores S = (f/τ)ᵀ g, the loss, P = softmax, ∂L/∂S = (P − I)/B and the two backward products
// g (∂L/∂S)ᵀ, f ∂L/∂S) three ways, for benchmarks/fused_loss.py: as the compiled step issues it
// (ATen calls, native_step.cpp), fused row by row without a B × B matrix (the scores, the
// exponentials and the gradient of one row stay in L1), and in part (BLAS's products, one pass
// per row for the rest). A measurement, not a training path: its exp is Cephes' polynomial, not
// torch's, and its sums run in another order, so its numbers agree with the step's to float32
// rounding only (tests/unit/test_fused_loss.py).
// The kernels' helpers (vectors of 16 floats, Cephes' exp, a row of scores, a row's softmax
// gradient) are the training step's own: fused_kernels.h.
#include <torch/extension.h>

#include <ctime>
#include <vector>

#include "../workflow/scripts/crl_approx/training/fused_kernels.h"  // using at::Tensor, too

namespace {

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
    score_row(f, g, D, B, i, inv_tau, z);
    loss += row_grad(z, B, i);
    for (int k = 0; k < D; ++k) {
      const float* gk = g + k * B;
      float* dgk = pdg + k * B;
      const float fk = f[k * B + i];
      vf dot = zero();
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
