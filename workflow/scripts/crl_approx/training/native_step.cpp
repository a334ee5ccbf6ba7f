// The hand-written training steps of crl_approx.training.manual, line for line in C++ (issue 35);
// and, at the end, the sampled inner-score step with fused_kernels.h's own loops for the narrow
// work (train.step_kernels = fused), which is not bitwise the Python step (its numbers differ by
// float32 rounding: tests/unit/test_fused_step.py).
//
// Each function issues the same ATen calls as its Python twin in manual.py, with the same
// arguments, in the same order, so a step's numbers are bitwise those of the Python step
// (tests/unit/test_native_step.py); what goes is the interpreter's cost of ~40 calls per replica
// per step (benchmarks/step_levers.py measures it). Keep the two in step: a change to one is a
// change to the other, and the test compares them on every path.
//
// Weights: per replica, f's tensors then g's tensors (n each, in manual._weights's layouts), the
// replicas one after another; ``scales``: per replica its log c (1,) for the cosine score, empty
// for the inner score.
// torch/extension.h would bring torch's whole C++ frontend (a third more of the build's compile
// time, CHANGELOG 1.25.0): ATen, the no-grad guard and pybind11's tensor casters are what this uses
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/utils/pybind.h>

#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "fused_kernels.h"

using at::Tensor;
using TL = std::vector<Tensor>;
using Saved = std::vector<std::pair<Tensor, Tensor>>;

namespace {

constexpr double kNormEps = 1e-12;  // F.normalize's (manual._NORM_EPS)

Tensor own(const Tensor& t) { return t.clone(at::MemoryFormat::Contiguous); }

// manual._tower_forward: the output transposed (D, n); ``saved`` gets each hidden layer's input
// and its output after the ReLU, then the last layer's input
Tensor tower_forward(const TL& ws, size_t off, size_t n, const Tensor& v, Saved& saved) {
  const size_t last = n - 2;
  Tensor h = v;
  for (size_t i = 0; i < last; i += 2) {
    Tensor out = at::addmm(ws[off + i + 1], h, ws[off + i]);
    out.relu_();
    saved.emplace_back(h, out);
    h = out;
  }
  saved.emplace_back(h, Tensor());
  return at::addmm(ws[off + last + 1], ws[off + last], h.t());
}

// manual._tower_backward: appends the tower's n gradients to ``grads``
void tower_backward(const TL& ws, size_t off, size_t n, const Saved& saved, const Tensor& grad_t,
                    TL& grads) {
  const size_t last = n - 2, base = grads.size();
  grads.resize(base + n);
  grads[base + last] = at::mm(grad_t, saved.back().first);
  grads[base + last + 1] = grad_t.sum(1, true);
  if (last == 0) return;
  Tensor grad = at::mm(grad_t.t(), ws[off + last]);
  for (long i = static_cast<long>(last) - 2; i >= 0; i -= 2) {
    const auto& layer = saved[i / 2];
    grad = at::threshold_backward(grad, layer.second, 0);
    grads[base + i + 1] = grad.sum(0, true);
    grads[base + i] = at::mm(layer.first.t(), grad);
    if (i > 0) grad = at::mm(grad, ws[off + i].t());
  }
}

// manual._unit
struct Unit {
  Tensor u, clamped, free;
};

Unit unit(const Tensor& t) {
  Tensor norm = at::linalg_vector_norm(t, 2, at::IntArrayRef{0}, true);
  Tensor clamped = norm.clamp_min(kNormEps);
  return {at::div(t, clamped), clamped, at::ge(norm, kNormEps).to(t.scalar_type())};
}

// manual._unit_backward
Tensor unit_backward(const Unit& un, const Tensor& grad_u) {
  Tensor dot = at::mul(un.u, grad_u).sum(0, true);
  dot.mul_(un.free);
  return at::sub(grad_u, at::mul(un.u, dot)).div_(un.clamped);
}

// one replica's towers on x, y and its score matrix: the inner score f gᵀ (``inner_scale``
// folded into f first, as manual._in_batch folds 1/τ), or the cosine score (manual._cosine_scores)
struct Scores {
  Tensor s, ft, gt, c;
  Saved sf, sg;
  Unit uf, ug;
};

Scores scores(const TL& ws, size_t of, size_t n, const Tensor& x, const Tensor& y,
              const Tensor* log_c, const double* inner_scale) {
  Scores out;
  out.ft = tower_forward(ws, of, n, x, out.sf);
  out.gt = tower_forward(ws, of + n, n, y, out.sg);
  if (log_c == nullptr) {
    const Tensor a = inner_scale ? at::mul(out.ft, *inner_scale) : out.ft;
    out.s = at::mm(a.t(), out.gt);
  } else {
    out.uf = unit(out.ft);
    out.ug = unit(out.gt);
    out.c = log_c->exp();
    out.s = at::mm(out.uf.u.t(), out.ug.u);
    out.s.mul_(out.c);
  }
  return out;
}

// the backward of ``scores`` from ∂/∂S (manual's inner branches and manual._cosine_backward)
void scores_backward(const TL& ws, size_t of, size_t n, const Scores& sc, const Tensor& grad_s,
                     bool cosine, bool learn, TL& grads) {
  if (!cosine) {
    tower_backward(ws, of, n, sc.sf, at::mm(sc.gt, grad_s.t()), grads);
    tower_backward(ws, of + n, n, sc.sg, at::mm(sc.ft, grad_s), grads);
    return;
  }
  Tensor df = at::mm(sc.ug.u, grad_s.t());
  df.mul_(sc.c);
  tower_backward(ws, of, n, sc.sf, unit_backward(sc.uf, df), grads);
  Tensor dg = at::mm(sc.uf.u, grad_s);
  dg.mul_(sc.c);
  tower_backward(ws, of + n, n, sc.sg, unit_backward(sc.ug, dg), grads);
  if (learn) grads.push_back(at::mul(grad_s, sc.s).sum().reshape({1}));
}

// manual._info_nce: the loss (1,) and P = softmax(logits)
std::pair<Tensor, Tensor> info_nce(const Tensor& logits, double tau) {
  Tensor p = at::softmax(logits, 1);
  Tensor row_max = logits.amax(1);  // one statement per call: Python's left-to-right order
  Tensor lse = at::sub(row_max, at::log(p.amax(1)));
  return {at::mul(at::sub(lse, logits.diagonal()).mean(0, true), tau), p};
}

// the shapes every step needs: n ≥ 2 tensors per tower, both towers of every replica, a log c
// per replica or none
void check_shapes(const TL& weights, int64_t n, const TL& scales, int64_t replicas) {
  TORCH_CHECK(n >= 2 && n % 2 == 0, "a tower has an even number (>= 2) of tensors, not ", n);
  TORCH_CHECK(static_cast<int64_t>(weights.size()) == replicas * 2 * n, "weights: ",
              weights.size(), " tensors for ", replicas, " replicas of 2 towers of ", n);
  TORCH_CHECK(scales.empty() || static_cast<int64_t>(scales.size()) == replicas,
              "scales: one log c per replica or none, not ", scales.size());
}

const Tensor* scale_of(const TL& scales, size_t r) { return scales.empty() ? nullptr : &scales[r]; }

// P = softmax, in place into ∂/∂S = (P − I)/B
void to_score_grad(Tensor& p, int64_t batch) {
  p.diagonal().sub_(1.0);
  p.mul_(1.0 / batch);
}

// one replica of manual.in_batch_step on its own x, y (B, d): its loss; its gradients appended
Tensor replica_step(const TL& ws, size_t of, size_t n, const Tensor& xr, const Tensor& yr,
                    const Tensor* log_c, bool learn, double tau, TL& grads) {
  const double inv_tau = 1.0 / tau;
  Scores sc = scores(ws, of, n, xr, yr, log_c, &inv_tau);
  auto [loss, p] = info_nce(log_c ? at::mul(sc.s, inv_tau) : sc.s, tau);
  to_score_grad(p, xr.size(0));
  scores_backward(ws, of, n, sc, p, log_c != nullptr, learn, grads);
  return loss;
}

// one replica of manual.in_batch_losses: its loss alone
Tensor replica_loss(const TL& ws, size_t of, size_t n, const Tensor& xr, const Tensor& yr,
                    const Tensor* log_c, double tau) {
  const double inv_tau = 1.0 / tau;
  Scores sc = scores(ws, of, n, xr, yr, log_c, &inv_tau);
  return info_nce(log_c ? at::mul(sc.s, inv_tau) : sc.s, tau).first;
}

}  // namespace

// manual.in_batch_step: the R losses and every replica's gradients (f's, g's, log c's if learnt)
std::pair<Tensor, TL> in_batch_step(const TL& weights, int64_t n, const TL& scales, bool learn,
                                    const Tensor& x, const Tensor& y, double tau) {
  at::NoGradGuard no_grad;
  TL losses, grads;
  const int64_t replicas = x.size(0);
  check_shapes(weights, n, scales, replicas);
  TORCH_CHECK(y.size(0) == replicas, "x and y have different replica counts");
  for (int64_t r = 0; r < replicas; ++r) {
    const size_t of = static_cast<size_t>(r) * 2 * n;
    Tensor xr = own(x[r]);
    Tensor yr = own(y[r]);
    losses.push_back(replica_step(weights, of, n, xr, yr, scale_of(scales, r), learn, tau, grads));
  }
  return {at::cat(losses), grads};
}

// manual.in_batch_losses: the R losses alone (validation)
Tensor in_batch_losses(const TL& weights, int64_t n, const TL& scales, const Tensor& x,
                       const Tensor& y, double tau) {
  at::NoGradGuard no_grad;
  TL losses;
  check_shapes(weights, n, scales, x.size(0));
  TORCH_CHECK(y.size(0) == x.size(0), "x and y have different replica counts");
  for (int64_t r = 0; r < x.size(0); ++r) {
    Tensor xr = own(x[r]);
    Tensor yr = own(y[r]);
    losses.push_back(replica_loss(weights, r * 2 * n, n, xr, yr, scale_of(scales, r), tau));
  }
  return at::cat(losses);
}

namespace {

// one replica of manual.population_step (manual._population's ATen calls): its loss (1,); its
// gradients appended
Tensor replica_population(const TL& ws, size_t of, size_t n, const Tensor& x, const Tensor& y,
                          const Tensor* log_c, bool learn, const Tensor& wx, const Tensor& log_wy,
                          const Tensor& joint, double tau, TL& grads) {
  Scores sc = scores(ws, of, n, x, y, log_c, nullptr);
  Tensor z = at::add(at::mul(sc.s, 1.0 / tau), log_wy);
  Tensor p = at::softmax(z, 1);
  Tensor row_max = z.amax(1, true);
  Tensor lse = at::sub(row_max, at::log(p.amax(1, true)));
  Tensor first = at::mul(at::mul(lse, wx).sum(), tau);
  Tensor loss = at::sub(first, at::mul(joint, sc.s).sum());
  p.mul_(wx).sub_(joint);
  scores_backward(ws, of, n, sc, p, log_c != nullptr, learn, grads);
  return loss.reshape({1});
}

}  // namespace

// manual.population_step on the grid's constants (manual.PopulationConstants)
std::pair<Tensor, TL> population_step(const TL& weights, int64_t n, const TL& scales, bool learn,
                                      const TL& gx, const TL& gy, const Tensor& wx,
                                      const Tensor& log_wy, const Tensor& joint, double tau) {
  at::NoGradGuard no_grad;
  TL losses, grads;
  check_shapes(weights, n, scales, static_cast<int64_t>(gx.size()));
  TORCH_CHECK(gy.size() == gx.size(), "gx and gy have different replica counts");
  for (size_t r = 0; r < gx.size(); ++r) {
    losses.push_back(replica_population(weights, r * 2 * n, n, gx[r], gy[r], scale_of(scales, r),
                                        learn, wx, log_wy, joint, tau, grads));
  }
  return {at::cat(losses), grads};
}

// population_step with fused_kernels.h's kernels, for either score (rounding differs from the
// ATen step's: train.step_kernels = fused): the towers' narrow layers and the population tail
// (population_tail; for the cosine score on c·f/|f| and g/|g|, unit_columns). ``lw``, ``joint_pad``:
// log wy and the joint weights padded to m rounded up to 16 (manual.PopulationConstants). A replica
// whose shapes the kernels do not take (a hidden width not a multiple of 16, a single layer,
// D > kTailDims) runs the ATen step. Returns the losses, the gradients and how many replicas ran
// the fused kernels.
std::tuple<Tensor, TL, int64_t> fused_population_step(
    const TL& weights, int64_t n, const TL& scales, bool learn, const TL& gx, const TL& gy,
    const Tensor& wx, const Tensor& log_wy, const Tensor& joint, const Tensor& lw,
    const Tensor& joint_pad, double tau) {
  at::NoGradGuard no_grad;
  TL losses, grads;
  int64_t fused = 0;
  check_shapes(weights, n, scales, static_cast<int64_t>(gx.size()));
  TORCH_CHECK(gy.size() == gx.size(), "gx and gy have different replica counts");
  for (size_t r = 0; r < gx.size(); ++r) {
    const size_t of = r * 2 * n;
    const Tensor* log_c = scale_of(scales, r);
    const int64_t dims = weights[of + n - 2].size(0);  // the last layer's (D, width)
    if (!fusable_towers(weights, of, n) || dims > kTailDims ||
        gx[r].scalar_type() != at::kFloat) {
      losses.push_back(replica_population(weights, of, n, gx[r], gy[r], log_c, learn, wx, log_wy,
                                          joint, tau, grads));
      continue;
    }
    ++fused;
    FusedTower tf = fused_tower_forward(weights, of, n, gx[r]);
    FusedTower tg = fused_tower_forward(weights, of + n, n, gy[r]);
    if (log_c == nullptr) {
      auto t = population_tail(tf.out, tg.out, wx, lw, joint_pad, tau);
      losses.push_back(t[0]);
      fused_tower_backward(weights, of, n, tf, t[1], grads);
      fused_tower_backward(weights, of + n, n, tg, t[2], grads);
      continue;
    }
    // the cosine score c·⟨uf, ug⟩: the tail on (c·uf, ug); ∂uf = c·∂(c·uf), ∂log c = Σ (c·uf)⊙∂(c·uf)
    const Columns uf = unit_columns(tf.out), ug = unit_columns(tg.out);
    const float c = log_c->exp().item<float>();
    const Tensor cf = at::mul(uf.u, c);
    auto t = population_tail(cf, ug.u, wx, lw, joint_pad, tau);
    losses.push_back(t[0]);
    fused_tower_backward(weights, of, n, tf, unit_columns_backward(uf, t[1], c), grads);
    fused_tower_backward(weights, of + n, n, tg, unit_columns_backward(ug, t[2], 1.0f), grads);
    if (learn) {
      const float *pc = ptr(cf), *pd = ptr(t[1]);
      double dlog_c = 0.0;
      for (int64_t e = 0; e < cf.numel(); ++e) dlog_c += static_cast<double>(pc[e]) * pd[e];
      grads.push_back(at::full({1}, dlog_c, cf.options()));
    }
  }
  return {at::cat(losses), grads, fused};
}

// in_batch_step for the inner score with fused_kernels.h's kernels (rounding differs from the
// ATen step's: train.step_kernels = fused); a replica whose shapes the kernels do not take runs
// the ATen step. Returns the losses, the gradients and how many replicas ran the fused kernels.
std::tuple<Tensor, TL, int64_t> fused_in_batch_step(const TL& weights, int64_t n,
                                                    const Tensor& x, const Tensor& y,
                                                    double tau) {
  at::NoGradGuard no_grad;
  TL losses, grads;
  int64_t fused = 0;
  const int64_t replicas = x.size(0);
  check_shapes(weights, n, {}, replicas);
  TORCH_CHECK(y.size(0) == replicas, "x and y have different replica counts");
  const double inv_tau = 1.0 / tau;
  for (int64_t r = 0; r < replicas; ++r) {
    const size_t of = static_cast<size_t>(r) * 2 * n;
    Tensor xr = own(x[r]);
    Tensor yr = own(y[r]);
    if (!fusable(weights, of, n, xr, yr)) {
      losses.push_back(replica_step(weights, of, n, xr, yr, nullptr, false, tau, grads));
      continue;
    }
    ++fused;
    FusedTower tf = fused_tower_forward(weights, of, n, xr);
    FusedTower tg = fused_tower_forward(weights, of + n, n, yr);
    Tensor df, dg;
    if (tf.out.size(0) <= kTailDims) {
      auto t = tail(tf.out, tg.out, tau);
      losses.push_back(t[0]);
      df = t[1];
      dg = t[2];
    } else {
      auto [loss, p] = info_nce(at::mm(at::mul(tf.out, inv_tau).t(), tg.out), tau);
      losses.push_back(loss);
      to_score_grad(p, xr.size(0));
      df = at::mm(tg.out, p.t());
      dg = at::mm(tf.out, p);
    }
    fused_tower_backward(weights, of, n, tf, df, grads);
    fused_tower_backward(weights, of + n, n, tg, dg, grads);
  }
  return {at::cat(losses), grads, fused};
}

// in_batch_losses for the inner score with fused_kernels.h's kernels (validation of a fused
// step's training); a replica whose shapes the kernels do not take runs ATen's
Tensor fused_in_batch_losses(const TL& weights, int64_t n, const Tensor& x, const Tensor& y,
                             double tau) {
  at::NoGradGuard no_grad;
  TL losses;
  check_shapes(weights, n, {}, x.size(0));
  TORCH_CHECK(y.size(0) == x.size(0), "x and y have different replica counts");
  const double inv_tau = 1.0 / tau;
  for (int64_t r = 0; r < x.size(0); ++r) {
    const size_t of = static_cast<size_t>(r) * 2 * n;
    Tensor xr = own(x[r]);
    Tensor yr = own(y[r]);
    if (!fusable(weights, of, n, xr, yr)) {
      losses.push_back(replica_loss(weights, of, n, xr, yr, nullptr, tau));
      continue;
    }
    Tensor ft = fused_tower_forward(weights, of, n, xr).out;
    Tensor gt = fused_tower_forward(weights, of + n, n, yr).out;
    if (ft.size(0) <= kTailDims) {
      losses.push_back(tail_loss(ft, gt, tau));
    } else {
      losses.push_back(info_nce(at::mm(at::mul(ft, inv_tau).t(), gt), tau).first);
    }
  }
  return at::cat(losses);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("in_batch_step", &in_batch_step);
  m.def("in_batch_losses", &in_batch_losses);
  m.def("population_step", &population_step);
  m.def("fused_in_batch_step", &fused_in_batch_step);
  m.def("fused_in_batch_losses", &fused_in_batch_losses);
  m.def("fused_population_step", &fused_population_step);
}
