// Issue 35's fused sampled step (native_step.cpp's fused_in_batch_step): one replica's in-batch InfoNCE step for the inner score with
// the narrow work in the kernels below instead of ATen calls (native_step.cpp's in_batch_step
// issues ~60 ATen calls per replica; this one 4 products and a few allocations).
//
// What stays ATen: the hidden layers' wide products (width × width: BLAS at the host's peak).
// What is fused: the first layer when its input is narrow (x w + b, ReLU: one pass); the last
// layer (D × width, D narrow: one pass per row); the tail (the scores, the softmax, the loss,
// ∂L/∂S and its two products, two rows at a time without a B × B matrix, for D <= kTailDims); each
// layer's backward ReLU mask with its bias gradient (one pass), and the first layer's weight
// gradient in that pass. Its exp is Cephes' polynomial and its sums run in their own order, so
// the numbers agree with native_step.cpp's to float32 rounding, not bitwise; each kernel sums in
// one fixed order (rows in chunks of kChunk, the chunks' sums added in turn), whatever the
// replicas beside it, so a replica's numbers do not depend on the others
// (tests/unit/test_fused_step.py). The population step (native_step.cpp's fused_population_step)
// runs the same towers with population_tail, one row of the n × m grid's scores at a time, and for
// the cosine score unit_columns (tests/unit/test_fused_population.py). Built with -march=native, the compiler contracts a·b + c into
// fused multiply-adds where the CPU has them: the kernels' last bits depend on the CPU's
// instruction set and the compiler, as ATen's depend on the CPU.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

using at::Tensor;
using TL = std::vector<Tensor>;

namespace {

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
constexpr int kLanes = 16;
constexpr int kChunk = 64;     // rows summed apart before their sum joins the total
constexpr int kTailDims = 8;   // the fused tail up to this D (benchmarks/fused_loss.json)
constexpr int kNarrowIn = 16;  // a first layer with at most this many inputs is fused

vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
vf zero() { return vf{} * 0.0f; }
float hsum(vf v) {
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}
float hmax(vf v) {
  float s = v[0];
  for (int l = 1; l < kLanes; ++l) s = v[l] > s ? v[l] : s;
  return s;
}

// exp(x) on 16 lanes for x <= 0 (Cephes' expf; clamped at -87)
vf vexp_neg(vf x) {
  const vf lo = zero() - 87.0f;
  x = x < lo ? lo : x;
  vf t = x * 1.44269504088896341f + 0.5f;
  vi it = __builtin_convertvector(t, vi);
  vf ft = __builtin_convertvector(it, vf);
  it = it + (vi)(t < ft);  // floor for negative t
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

float* ptr(const Tensor& t) { return t.data_ptr<float>(); }

// a += b over n floats (n % 16 == 0)
void add_to(float* a, const float* b, int64_t n) {
  for (int64_t c = 0; c < n; c += kLanes) store(a + c, load(a + c) + load(b + c));
}

// relu(x w + b): x (B, din), w (din, H), b (1, H)
Tensor first_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t B = x.size(0), din = x.size(1), H = w.size(1);
  Tensor out = at::empty({B, H}, x.options());
  const float *px = ptr(x), *pw = ptr(w), *pb = ptr(b);
  float* po = ptr(out);
  for (int64_t i = 0; i < B; ++i) {
    const float* xi = px + i * din;
    for (int64_t c = 0; c < H; c += kLanes) {
      vf acc = load(pb + c);
      for (int64_t k = 0; k < din; ++k) acc += load(pw + k * H + c) * xi[k];
      store(po + i * H + c, (acc > 0.0f) | (acc != acc) ? acc : zero());  // NaN passes, as ATen's
    }
  }
  return out;
}

// the last layer, transposed: w h^T + b, (D, B); w (D, H), b (D, 1), h (B, H)
Tensor last_forward(const Tensor& w, const Tensor& b, const Tensor& h) {
  const int64_t D = w.size(0), H = w.size(1), B = h.size(0);
  Tensor out = at::empty({D, B}, h.options());
  const float *pw = ptr(w), *pb = ptr(b), *ph = ptr(h);
  float* po = ptr(out);
  for (int64_t i = 0; i < B; ++i) {
    const float* hi = ph + i * H;
    for (int64_t k = 0; k < D; ++k) {
      vf acc = zero();
      for (int64_t c = 0; c < H; c += kLanes) acc += load(pw + k * H + c) * load(hi + c);
      po[k * B + i] = hsum(acc) + pb[k];
    }
  }
  return out;
}

// row i of the scores S = (f/τ)ᵀ g into z (B): f, g (D, B) (benchmarks/fused_loss.cpp's tail;
// the step's makes two rows at a time: score_rows2)
[[maybe_unused]] void score_row(const float* f, const float* g, int64_t D, int64_t B, int64_t i,
                                float inv_tau, float* z) {
  const float a0 = f[i] * inv_tau;
  for (int64_t j = 0; j < B; j += kLanes) store(z + j, load(g + j) * a0);
  for (int64_t k = 1; k < D; ++k) {
    const float ak = f[k * B + i] * inv_tau;
    const float* gk = g + k * B;
    for (int64_t j = 0; j < B; j += kLanes) store(z + j, load(z + j) + load(gk + j) * ak);
  }
}

// the largest of z (B)
float row_max(const float* z, int64_t B) {
  vf mx = load(z);
  for (int64_t j = kLanes; j < B; j += kLanes) {
    vf v = load(z + j);
    mx = v > mx ? v : mx;
  }
  return hmax(mx);
}

// one row of logits z (B) in place: exp(z - max)·r with r = 1/(Σ·B), minus 1/B at the diagonal
// i; returns the row's lse - z_i
double row_grad(float* z, int64_t B, int64_t i) {
  const float m = row_max(z, B), zii = z[i], inv_b = 1.0f / B;
  vf acc = zero();
  for (int64_t j = 0; j < B; j += kLanes) {
    vf v = vexp_neg(load(z + j) - m);
    store(z + j, v);
    acc += v;
  }
  const float s = hsum(acc);
  const float r = (1.0f / s) * inv_b;
  for (int64_t j = 0; j < B; j += kLanes) store(z + j, load(z + j) * r);
  z[i] -= inv_b;
  return static_cast<double>(m + std::log(s) - zii);
}

// rows i and i + 1 of the scores into za, zb: score_row's sums, in its order, the two rows sharing
// their loads of g (which product of a sum the compiler fuses into a multiply-add is its choice:
// score_row's rows and these agree to float32 rounding, not always bitwise)
template <int D>
void score_rows2(const float* f, const float* g, int64_t B, int64_t i, float inv_tau, float* za,
                 float* zb) {
  float a[D], b[D];
  for (int k = 0; k < D; ++k) {
    a[k] = f[k * B + i] * inv_tau;
    b[k] = f[k * B + i + 1] * inv_tau;
  }
  for (int64_t j = 0; j < B; j += kLanes) {
    const vf g0 = load(g + j);
    vf sa = g0 * a[0], sb = g0 * b[0];
    for (int k = 1; k < D; ++k) {
      const vf gk = load(g + k * B + j);
      sa = sa + gk * a[k];
      sb = sb + gk * b[k];
    }
    store(za + j, sa);
    store(zb + j, sb);
  }
}

// the backward of rows i and i + 1 (their ∂L/∂S rows ea, eb): ∂L/∂f at (k, i), (k, i + 1) into
// pdf, and each row's share of ∂L/∂g added to part (D, B), row i's first: every sum in the order
// one row at a time makes it, the partial sums kept in registers across the two rows
template <int D>
void rows_backward2(const float* f, const float* g, int64_t B, int64_t i, const float* ea,
                    const float* eb, float* part, float* pdf) {
  float fa[D], fb[D];
  vf da[D], db[D];
  for (int k = 0; k < D; ++k) {
    fa[k] = f[k * B + i];
    fb[k] = f[k * B + i + 1];
    da[k] = zero();
    db[k] = zero();
  }
  for (int64_t j = 0; j < B; j += kLanes) {
    const vf va = load(ea + j), vb = load(eb + j);
    for (int k = 0; k < D; ++k) {
      const vf gk = load(g + k * B + j);
      da[k] += gk * va;
      db[k] += gk * vb;
      float* pk = part + k * B + j;
      store(pk, (load(pk) + va * fa[k]) + vb * fb[k]);
    }
  }
  for (int k = 0; k < D; ++k) {
    pdf[k * B + i] = hsum(da[k]);
    pdf[k * B + i + 1] = hsum(db[k]);
  }
}

// the tail for D columns: two rows of S at a time (B even), the loads of g and of ∂L/∂g's
// partial sums shared by the two
template <int D>
std::vector<Tensor> tail_d(const Tensor& ft, const Tensor& gt, double tau) {
  const int64_t B = ft.size(1);
  Tensor df = at::empty({D, B}, ft.options()), dg = at::zeros({D, B}, ft.options());
  Tensor part = at::zeros({D, B}, ft.options());
  const float *f = ptr(ft), *g = ptr(gt);
  float *pdf = ptr(df), *pdg = ptr(dg), *pp = ptr(part);
  const float inv_tau = static_cast<float>(1.0 / tau);
  std::vector<float> rows(2 * B);
  float *za = rows.data(), *zb = za + B;
  double loss = 0.0;
  for (int64_t i = 0; i < B; i += 2) {
    score_rows2<D>(f, g, B, i, inv_tau, za, zb);
    loss += row_grad(za, B, i);
    loss += row_grad(zb, B, i + 1);
    rows_backward2<D>(f, g, B, i, za, zb, pp, pdf);
    if ((i + 2) % kChunk == 0 || i + 2 == B) {  // the chunk's rows join ∂L/∂g
      add_to(pdg, pp, D * B);
      std::fill(pp, pp + D * B, 0.0f);
    }
  }
  return {at::full({1}, tau * loss / B, ft.options()), df, dg};
}

// the tail's loss alone for D columns (validation), two rows of S at a time
template <int D>
Tensor tail_loss_d(const Tensor& ft, const Tensor& gt, double tau) {
  const int64_t B = ft.size(1);
  const float *f = ptr(ft), *g = ptr(gt);
  const float inv_tau = static_cast<float>(1.0 / tau);
  std::vector<float> rows(2 * B);
  float* z[2] = {rows.data(), rows.data() + B};
  double loss = 0.0;
  for (int64_t i = 0; i < B; i += 2) {
    score_rows2<D>(f, g, B, i, inv_tau, z[0], z[1]);
    for (int r = 0; r < 2; ++r) {
      const float m = row_max(z[r], B);
      vf acc = zero();
      for (int64_t j = 0; j < B; j += kLanes) acc += vexp_neg(load(z[r] + j) - m);
      loss += static_cast<double>(m + std::log(hsum(acc)) - z[r][i + r]);
    }
  }
  return at::full({1}, tau * loss / B, ft.options());
}

// fn(std::integral_constant<int, D>{}) for the tail's D (1 <= D <= kTailDims): one
// instantiation of a tail template per D
template <int D = 1, class Fn>
auto by_tail_dims(int64_t dims, Fn&& fn) {
  if constexpr (D < kTailDims) {
    if (dims != D) return by_tail_dims<D + 1>(dims, fn);
  } else {
    TORCH_CHECK(dims == D, "the fused tail takes D <= ", kTailDims, ", not ", dims);
  }
  return fn(std::integral_constant<int, D>{});
}

// the tail: f, g (D, B) -> the loss τ·mean(lse - S_ii) of S = (f/τ)ᵀ g, ∂L/∂f = g (∂L/∂S)ᵀ and
// ∂L/∂g = f ∂L/∂S, rows of S in turn without a B × B matrix (D <= kTailDims, B % 16 == 0)
std::vector<Tensor> tail(const Tensor& ft, const Tensor& gt, double tau) {
  return by_tail_dims(ft.size(0), [&](auto d) { return tail_d<decltype(d)::value>(ft, gt, tau); });
}

// the tail's loss alone (validation): τ·mean_i(lse_j S_ij − S_ii), rows of S in turn
Tensor tail_loss(const Tensor& ft, const Tensor& gt, double tau) {
  return by_tail_dims(ft.size(0),
                      [&](auto d) { return tail_loss_d<decltype(d)::value>(ft, gt, tau); });
}

// the population tail for D columns: f (D, n), g (D, m) -> the loss τ Σ_i wx_i lse_i − Σ_ij joint_ij S_ij
// of S = fᵀ g, lse_i = log Σ_j exp(S_ij/τ + log wy_j), ∂L/∂f = g qᵀ and ∂L/∂g = f q with
// q_ij = wx_i softmax_j(S_i·/τ + log wy) − joint_ij: rows of S in turn without an n × m matrix (the
// grid's Σ_ij joint_ij S_ij as Σ_i f_i·(joint g)_i). ``lw`` (mp) and ``joint`` (n, mp): the grid's log
// wy and joint weights padded to mp = m rounded up to 16, with −inf and 0. An exponent below −87 is
// taken as 0 (ATen's exp gives a float32 subnormal or 0 there; its row sum is >= 1).
template <int D>
std::vector<Tensor> population_tail_d(const Tensor& ft, const Tensor& gt, const Tensor& wx,
                                      const Tensor& lw, const Tensor& joint, double tau) {
  const int64_t n = ft.size(1), m = gt.size(1), mp = lw.size(0);
  TORCH_CHECK(mp % kLanes == 0 && mp >= m && mp < m + kLanes, "lw: m padded to 16, not ", mp);
  TORCH_CHECK(joint.size(0) == n && joint.size(1) == mp, "joint: (n, mp)");
  Tensor gp = at::zeros({D, mp}, ft.options());
  gp.narrow(1, 0, m).copy_(gt);
  Tensor df = at::empty({D, n}, ft.options()), dgp = at::zeros({D, mp}, ft.options());
  Tensor part = at::zeros({D, mp}, ft.options());
  const float *f = ptr(ft), *g = ptr(gp), *pwx = ptr(wx), *plw = ptr(lw), *pj = ptr(joint);
  float *pdf = ptr(df), *pdg = ptr(dgp), *pp = ptr(part);
  const float inv_tau = static_cast<float>(1.0 / tau);
  const vf floor_x = zero() - 87.0f;
  std::vector<float> row(mp);
  float* z = row.data();
  double loss = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    float a[D], fi[D];
    for (int k = 0; k < D; ++k) {
      fi[k] = f[k * n + i];
      a[k] = fi[k] * inv_tau;
    }
    for (int64_t j = 0; j < mp; j += kLanes) {
      vf s = load(g + j) * a[0];
      for (int k = 1; k < D; ++k) s = s + load(g + k * mp + j) * a[k];
      store(z + j, s + load(plw + j));
    }
    const float mx = row_max(z, mp);
    vf acc = zero();
    for (int64_t j = 0; j < mp; j += kLanes) {
      const vf x = load(z + j) - mx;
      const vf e = x < floor_x ? zero() : vexp_neg(x);
      store(z + j, e);
      acc += e;
    }
    const float sum = hsum(acc), r = pwx[i] / sum;
    loss += tau * static_cast<double>(pwx[i]) * static_cast<double>(mx + std::log(sum));
    const float* ji = pj + i * mp;
    vf da[D], dj[D];
    for (int k = 0; k < D; ++k) da[k] = dj[k] = zero();
    for (int64_t j = 0; j < mp; j += kLanes) {
      const vf jv = load(ji + j), q = load(z + j) * r - jv;
      for (int k = 0; k < D; ++k) {
        const vf gk = load(g + k * mp + j);
        dj[k] += gk * jv;
        da[k] += gk * q;
        float* pk = pp + k * mp + j;
        store(pk, load(pk) + q * fi[k]);
      }
    }
    double joint_s = 0.0;
    for (int k = 0; k < D; ++k) {
      pdf[k * n + i] = hsum(da[k]);
      joint_s += static_cast<double>(fi[k]) * hsum(dj[k]);
    }
    loss -= joint_s;
    if ((i + 1) % kChunk == 0 || i + 1 == n) {  // the chunk's rows join ∂L/∂g
      add_to(pdg, pp, D * mp);
      std::fill(pp, pp + D * mp, 0.0f);
    }
  }
  return {at::full({1}, loss, ft.options()), df, dgp.narrow(1, 0, m).contiguous()};
}

// the population tail (D <= kTailDims): see population_tail_d
std::vector<Tensor> population_tail(const Tensor& ft, const Tensor& gt, const Tensor& wx,
                                    const Tensor& lw, const Tensor& joint, double tau) {
  return by_tail_dims(ft.size(0), [&](auto d) {
    return population_tail_d<decltype(d)::value>(ft, gt, wx, lw, joint, tau);
  });
}

// columns of t (D, n) on the unit sphere as manual._unit: u = t / max(|t|, 1e-12), with the clamped
// norms and whether the norm was not clamped (the backward's)
struct Columns {
  Tensor u;
  std::vector<float> clamped;
  std::vector<char> free;
};

Columns unit_columns(const Tensor& t) {
  const int64_t D = t.size(0), n = t.size(1);
  Columns c{at::empty({D, n}, t.options()), std::vector<float>(n), std::vector<char>(n)};
  const float* pt = ptr(t);
  float* pu = ptr(c.u);
  for (int64_t i = 0; i < n; ++i) {
    float ss = 0.0f;
    for (int64_t k = 0; k < D; ++k) ss += pt[k * n + i] * pt[k * n + i];
    const float norm = std::sqrt(ss);
    c.clamped[i] = std::max(norm, 1e-12f);
    c.free[i] = norm >= 1e-12f;
    for (int64_t k = 0; k < D; ++k) pu[k * n + i] = pt[k * n + i] / c.clamped[i];
  }
  return c;
}

// manual._unit_backward of scale·∂u: ∂t = (∂u − u·⟨u, ∂u⟩)·scale/|t| per column (∂u·scale/1e-12 where
// the norm was clamped). The scale comes last: at D = 1 (u = ±1) the bracket is exactly 0, as
// manual's is, whatever products the compiler fuses
Tensor unit_columns_backward(const Columns& c, const Tensor& du, float scale) {
  const int64_t D = du.size(0), n = du.size(1);
  Tensor dt = at::empty({D, n}, du.options());
  const float *pu = ptr(c.u), *pd = ptr(du);
  float* po = ptr(dt);
  for (int64_t i = 0; i < n; ++i) {
    float dot = 0.0f;
    for (int64_t k = 0; k < D; ++k) dot += pu[k * n + i] * pd[k * n + i];
    if (!c.free[i]) dot = 0.0f;
    const float r = scale / c.clamped[i];
    for (int64_t k = 0; k < D; ++k) po[k * n + i] = (pd[k * n + i] - pu[k * n + i] * dot) * r;
  }
  return dt;
}

// the last layer's backward from dt (D, B): its weight's gradient dt h (D, H) and bias's (D, 1),
// and the gradient at its input h (B, H) through the ReLU that made h, with that layer's bias
// gradient (1, H)
std::vector<Tensor> last_backward(const Tensor& dt, const Tensor& h, const Tensor& w) {
  const int64_t D = dt.size(0), B = dt.size(1), H = h.size(1);
  Tensor gw = at::zeros({D, H}, h.options()), gb = at::empty({D, 1}, h.options());
  Tensor grad = at::empty({B, H}, h.options()), gbh = at::zeros({1, H}, h.options());
  std::vector<float> part(static_cast<size_t>((D + 1) * H), 0.0f);
  std::vector<double> bsum(D, 0.0);
  const float *pd = ptr(dt), *ph = ptr(h), *pw = ptr(w);
  float *pgw = ptr(gw), *pg = ptr(grad), *pgbh = ptr(gbh), *pt = part.data();
  for (int64_t i = 0; i < B; ++i) {
    const float* hi = ph + i * H;
    float* gi = pg + i * H;
    for (int64_t c = 0; c < H; c += kLanes) {
      vf acc = zero();
      const vf hv = load(hi + c);
      for (int64_t k = 0; k < D; ++k) {
        const float dk = pd[k * B + i];
        acc += load(pw + k * H + c) * dk;
        store(pt + k * H + c, load(pt + k * H + c) + hv * dk);
      }
      acc = hv <= 0.0f ? zero() : acc;  // threshold_backward: a NaN output passes the gradient
      store(gi + c, acc);
      store(pt + D * H + c, load(pt + D * H + c) + acc);
    }
    for (int64_t k = 0; k < D; ++k) bsum[k] += pd[k * B + i];
    if ((i + 1) % kChunk == 0 || i + 1 == B) {
      add_to(pgw, pt, D * H);
      add_to(pgbh, pt + D * H, H);
      std::fill(part.begin(), part.end(), 0.0f);
    }
  }
  for (int64_t k = 0; k < D; ++k) ptr(gb)[k] = static_cast<float>(bsum[k]);
  return {gw, gb, grad, gbh};
}

// in place: grad (B, H) through the ReLU whose output is ``out``; returns the bias gradient
// (1, H) and, where x (B, din) is given, the weight gradient xᵀ grad (din, H)
std::pair<Tensor, Tensor> mask_backward(Tensor& grad, const Tensor& out, const Tensor* x) {
  const int64_t B = grad.size(0), H = grad.size(1), din = x ? x->size(1) : 0;
  Tensor gb = at::zeros({1, H}, grad.options());
  Tensor gw = x ? at::zeros({din, H}, grad.options()) : Tensor();
  std::vector<float> part(static_cast<size_t>((din + 1) * H), 0.0f);
  float *pg = ptr(grad), *pt = part.data();
  const float* po = ptr(out);
  const float* px = x ? ptr(*x) : nullptr;
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t c = 0; c < H; c += kLanes) {
      vf v = load(pg + i * H + c);
      v = load(po + i * H + c) <= 0.0f ? zero() : v;
      store(pg + i * H + c, v);
      store(pt + c, load(pt + c) + v);
      for (int64_t k = 0; k < din; ++k) {
        float* pk = pt + (k + 1) * H + c;
        store(pk, load(pk) + v * px[i * din + k]);
      }
    }
    if ((i + 1) % kChunk == 0 || i + 1 == B) {
      add_to(ptr(gb), pt, H);
      if (x) add_to(ptr(gw), pt + H, din * H);
      std::fill(part.begin(), part.end(), 0.0f);
    }
  }
  return {gb, gw};
}

struct FusedTower {
  std::vector<std::pair<Tensor, Tensor>> saved;  // each hidden layer's input and its output
  Tensor out;                                    // (D, B)
};

bool narrow_in(const Tensor& x) { return x.size(1) <= kNarrowIn; }

// a tower of n >= 4 tensors (a hidden layer at least) on v (B, din): the first layer fused when
// din is narrow, the other hidden layers ATen's, the last layer fused
FusedTower fused_tower_forward(const TL& ws, size_t off, size_t n, const Tensor& v) {
  FusedTower t;
  const size_t last = n - 2;
  Tensor h = v;
  for (size_t i = 0; i < last; i += 2) {
    Tensor out;
    if (i == 0 && narrow_in(v)) {
      out = first_forward(h, ws[off], ws[off + 1]);
    } else {
      out = at::addmm(ws[off + i + 1], h, ws[off + i]);
      out.relu_();
    }
    t.saved.emplace_back(h, out);
    h = out;
  }
  t.out = last_forward(ws[off + last], ws[off + last + 1], h);
  return t;
}

// appends the tower's n gradients to ``grads`` (manual._weights's layouts) from dt (D, B)
void fused_tower_backward(const TL& ws, size_t off, size_t n, const FusedTower& t,
                          const Tensor& dt, TL& grads) {
  const size_t last = n - 2, base = grads.size();
  grads.resize(base + n);
  auto lb = last_backward(dt, t.saved.back().second, ws[off + last]);
  grads[base + last] = lb[0];
  grads[base + last + 1] = lb[1];
  grads[base + last - 1] = lb[3];  // the top hidden layer's bias
  Tensor grad = lb[2];             // at the top hidden layer's pre-activation
  for (long j = static_cast<long>(last / 2) - 1; j >= 0; --j) {
    const auto& layer = t.saved[j];
    if (j == 0) {
      if (!grads[base].defined()) grads[base] = at::mm(layer.first.t(), grad);
      break;
    }
    grads[base + 2 * j] = at::mm(layer.first.t(), grad);
    grad = at::mm(grad, ws[off + 2 * j].t());
    const auto& below = t.saved[j - 1];
    const bool with_x = j == 1 && narrow_in(below.first);
    auto [gb, gw] = mask_backward(grad, below.second, with_x ? &below.first : nullptr);
    grads[base + 2 * j - 1] = gb;
    if (with_x) grads[base] = gw;
  }
}

// whether a replica's towers can be fused: n >= 4 tensors per tower (a hidden layer at least), hidden
// widths multiples of 16 (the population step's); and its sampled step: also the batch a multiple of
// 16, float32 data, as many y as x
bool fusable_towers(const TL& ws, size_t off, size_t n) {
  if (n < 4) return false;
  for (size_t t = 0; t < 2; ++t)
    for (size_t i = 0; i + 2 < n; i += 2)
      if (ws[off + t * n + i].size(1) % kLanes != 0) return false;
  return true;
}

bool fusable(const TL& ws, size_t off, size_t n, const Tensor& x, const Tensor& y) {
  if (x.scalar_type() != at::kFloat || x.size(0) % kLanes != 0) return false;
  if (y.size(0) != x.size(0) || y.scalar_type() != at::kFloat) return false;
  return fusable_towers(ws, off, n);
}

}  // namespace
