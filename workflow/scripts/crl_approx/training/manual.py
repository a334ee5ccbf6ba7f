"""The training steps of either score, forward and backward by hand, in fast layouts (issue 35).

Autograd builds a graph for every step: ~290 operator calls, of which a third are the graph's own
bookkeeping (the per-replica slicing functions of :mod:`.towers`, their copies and
concatenations, the engine's dispatch). This module issues, replica by replica, plain 2-D matrix
products and the element-wise derivative formulas (relu's ``threshold_backward``, the in-batch
loss's (P − I)/B with respect to the scores, logsumexp's softmax), without a graph.

**Layout.** A product with an operand only D wide (the towers' last layer, its weight gradient,
P·g in the loss's backward) runs several times slower in the row-major layout autograd uses than
in the transposed one (benchmarks/step_levers.py measures the step): so each tower's output is kept
transposed, fᵀ of shape (D, n), and every D-wide product is
computed in the orientation that runs fast. The numbers are the same functions, rounded in a
different order: a step agrees with autograd's to float32 rounding, not bitwise
(tests/unit/test_manual_step.py: one step's gradients within 1e-5 of autograd's, relative, in each
tower's norm, for both steps; a 25-step sampled training run close to autograd's); the release
that took this layout re-baselined the default run (CHANGELOG).

**Seeds stay independent.** Replica r's weights and inputs are copies of its own and every
intermediate is computed from them alone (the grid's weights, read-only, are shared); every
product is a 2-D product on them, so replica r meets
exactly the kernels a job with that replica alone meets, whatever the other replicas
(tests/unit/test_batched_training.py: R = 1 and R = 3 bitwise equal on every path).

**The weights stay in these layouts** between steps (:class:`ReplicaWeights`): the optimiser
updates them there, and the model's stacked parameters are written from them when read. AdamW is
elementwise, but torch's kernel rounds a tensor's last (numel mod vector width) elements in a
scalar tail: the transposed last layer puts other elements there, so its update rounds alike
only where width·D is a multiple of the vector width or below it (every width·D of the shipped
configs: 128·D, and W's widths times D = 2 or 8; tests/unit/test_manual_step.py).

Written here: the sampled step (:func:`in_batch_step`), its loss alone for validation
(:func:`in_batch_losses`) and the population step on a quadrature grid (:func:`population_step`),
each for the inner score and for the cosine score c·⟨f/|f|, g/|g|⟩ (:func:`_cosine_scores`: the
towers' outputs on the unit sphere as ``F.normalize`` puts them, log c learnt as one more tensor
per replica when the model learns it). The cosine step is autograd's to float32 rounding too (it
rounds c·⟨u_f, u_g⟩ where autograd rounds ⟨√c·u_f, √c·u_g⟩), with one difference beyond
rounding: at D = 1 every unit vector is ±1, so no tower weight moves the loss and the towers'
gradient is exactly zero here, where autograd's is rounding noise that AdamW's 1/√v scales up to
lr-sized moves (tests/unit/test_manual_step.py).
"""

from __future__ import annotations

import torch

from . import native

aten = torch.ops.aten


def _own(t: torch.Tensor) -> torch.Tensor:
    """A contiguous copy (never a view into a stacked tensor: the replica's memory is its own)."""
    return t.clone(memory_format=torch.contiguous_format)


def _weights(params, r: int) -> list[torch.Tensor]:
    """Replica r's weights and biases as 2-D tensors of its own: hidden layers as stored
    ((fan_in, fan_out), bias (1, fan_out)); the last layer transposed ((D, width), bias (D, 1))."""
    last = len(params) - 2
    return [_own(p[r].t() if i >= last else p[r]) for i, p in enumerate(params)]


def _tower_forward(ws, v: torch.Tensor):
    """One replica's tower on v (n, d): its output transposed, (D, n), and what backward needs
    (each hidden layer's input and its output after the ReLU; the last layer's input)."""
    saved = []
    last = len(ws) - 2
    h = v
    for i in range(0, last, 2):
        out = torch.addmm(ws[i + 1], h, ws[i]).relu_()
        saved.append((h, out))
        h = out
    saved.append((h, None))
    return torch.addmm(ws[last + 1], ws[last], h.t()), saved


def _tower_backward(ws, saved, grad_t: torch.Tensor) -> list[torch.Tensor]:
    """The gradients of one replica's weights and biases, in the layouts of :func:`_weights`,
    from the gradient of its transposed output (D, n)."""
    grads: list[torch.Tensor] = [None] * len(ws)  # type: ignore[list-item]
    last = len(ws) - 2
    h, _ = saved[-1]
    grads[last] = torch.mm(grad_t, h)  # (D, width): the gradient of the transposed weight
    grads[last + 1] = grad_t.sum(1, keepdim=True)
    if last == 0:
        return grads
    grad = torch.mm(grad_t.t(), ws[last])  # (n, width)
    for i in range(last - 2, -1, -2):
        h, out = saved[i // 2]
        grad = aten.threshold_backward(grad, out, 0)
        grads[i + 1] = grad.sum(0, keepdim=True)
        grads[i] = torch.mm(h.t(), grad)
        if i > 0:  # the layer's input (the data itself needs none)
            grad = torch.mm(grad, ws[i].t())
    return grads


class ReplicaWeights:
    """Every replica's weights and biases as tensors of its own in the layouts of :func:`_weights`,
    kept from step to step: the steps read them, the optimiser (:class:`.optim.ReplicaAdamW`)
    updates them in place, and :meth:`write_back` copies them into the model's stacked parameters
    when the model is read (per checkpoint; ``run_steps`` does it when it returns). Copying each
    replica's weights out of the stacked parameters every step, and stacking its gradients back,
    was ~20 % of a population step (benchmarks/step_levers.py). Each tensor is its own allocation,
    as the per-step copies were, so a replica's products meet the same kernels, bitwise."""

    def __init__(self, model, compiled: bool | None = None):
        self.stacked = (list(model.f), list(model.g))
        fs, gs = self.stacked
        #: per replica: (f's weights, g's weights)
        self.towers = [(_weights(fs, r), _weights(gs, r)) for r in range(model.replicas)]
        #: the cosine score's log c: the model's (R,) tensor, and per replica a (1,) tensor of its
        #: own (None for the inner score); learnt when the model's is a parameter
        cosine = model.score == "cosine"
        self.log_scale = model.log_scale if cosine else None
        self.scales = [
            _own(model.log_scale.detach()[r : r + 1]) if cosine else None
            for r in range(model.replicas)
        ]
        self.learn_scale = cosine and isinstance(model.log_scale, torch.nn.Parameter)
        #: every tensor, replica by replica (f's, g's, log c if learnt), the optimiser's order
        self.tensors = [
            t
            for (wf, wg), log_c in zip(self.towers, self.scales, strict=True)
            for t in wf + wg + ([log_c] if self.learn_scale else [])
        ]
        #: the last step's gradients, in the order and layouts of ``tensors``
        self.grads: list[torch.Tensor] = []
        #: the compiled steps on these tensors (:mod:`.native`: this module's twins, bitwise, with
        #: ATen's kernels; train.step_kernels), or None for the Python ones (``compiled`` None:
        #: where they can be had)
        self.native = native.bind(self, compiled, getattr(model, "step_kernels", "aten"))

    @torch.no_grad()
    def write_back(self) -> None:
        """The model's stacked parameters set to these weights (the last layers transposed back)."""
        for side, params in enumerate(self.stacked):
            last = len(params) - 2
            for r, tower in enumerate(self.towers):
                for k, param in enumerate(params):
                    w = tower[side][k]
                    param.data[r].copy_(w.t() if k >= last else w)
        if self.log_scale is not None:
            for r, log_c in enumerate(self.scales):
                self.log_scale.data[r].copy_(log_c[0])

    def stacked_grads(self) -> list[torch.Tensor]:
        """The last step's gradients in the model's stacked layout, in the order of
        ``model.parameters()`` (a learnt log c, f's, g's), as autograd would set ``.grad``
        (for tests and comparisons)."""
        n_f, n_g = (len(p) for p in self.stacked)
        per = n_f + n_g + int(self.learn_scale)
        rows = [self.grads[r * per : (r + 1) * per] for r in range(len(self.towers))]
        # model.parameters()'s order: the model's own log_scale (R,) first, then f's and g's
        out = [torch.cat([row[-1] for row in rows])] if self.learn_scale else []
        for lo, n in ((0, n_f), (n_f, n_g)):
            for k in range(n):
                parts = [row[lo + k].t() if k >= n - 2 else row[lo + k] for row in rows]
                out.append(torch.stack(parts))
        return out


_NORM_EPS = 1e-12  # F.normalize's


def _unit(t: torch.Tensor):
    """The columns of t (D, n) on the unit sphere as ``F.normalize`` puts them (each divided by
    its norm clamped at 1e-12), with what the backward needs: (u, the clamped norms (1, n),
    where the norm was not clamped (1, n), as 0/1)."""
    norm = torch.linalg.vector_norm(t, dim=0, keepdim=True)
    clamped = norm.clamp_min(_NORM_EPS)
    return t / clamped, clamped, (norm >= _NORM_EPS).to(t.dtype)


def _unit_backward(unit, grad_u: torch.Tensor) -> torch.Tensor:
    """The gradient with respect to t of :func:`_unit`'s u from the gradient of u:
    (∂u − u·⟨u, ∂u⟩)/|t| per column where the norm was not clamped, ∂u/1e-12 where it was."""
    u, clamped, free = unit
    dot = (u * grad_u).sum(0, keepdim=True).mul_(free)
    return (grad_u - u * dot).div_(clamped)


def _cosine_scores(wf, wg, x: torch.Tensor, y: torch.Tensor, log_c: torch.Tensor):
    """One replica's cosine score matrix S = c·⟨f(x)/|f(x)|, g(y)/|g(y)|⟩ (n, m), c = e^(log c),
    and what :func:`_cosine_backward` needs."""
    ft, saved_f = _tower_forward(wf, x)
    gt, saved_g = _tower_forward(wg, y)
    uf, ug = _unit(ft), _unit(gt)
    c = log_c.exp()
    return torch.mm(uf[0].t(), ug[0]).mul_(c), (saved_f, saved_g, uf, ug, c)


def _cosine_backward(wf, wg, grad_s: torch.Tensor, s: torch.Tensor, ctx, learn: bool):
    """One replica's gradients (f's, g's, then log c's if ``learn``) from ∂/∂S of
    :func:`_cosine_scores`: ∂uf = c·ug ∂Sᵀ, ∂ug = c·uf ∂S, ∂log c = Σ ∂S ⊙ S."""
    saved_f, saved_g, uf, ug, c = ctx
    grads = _tower_backward(wf, saved_f, _unit_backward(uf, torch.mm(ug[0], grad_s.t()).mul_(c)))
    grads += _tower_backward(wg, saved_g, _unit_backward(ug, torch.mm(uf[0], grad_s).mul_(c)))
    if learn:
        grads.append((grad_s * s).sum().reshape(1))
    return grads


def _info_nce(logits: torch.Tensor, tau: float):
    """The in-batch InfoNCE of one replica's logits S/τ (B, B): the loss (1,) and P = softmax.
    lse from the row maximum (max P ≥ 1/B never underflows)."""
    p = torch.softmax(logits, dim=1)
    lse = logits.amax(1) - torch.log(p.amax(1))
    loss = tau * (lse - logits.diagonal()).mean(0, keepdim=True)
    return loss, p


def _in_batch(wf, wg, x: torch.Tensor, y: torch.Tensor, tau: float):
    """Forward of one replica's in-batch InfoNCE on x, y (B, d) for the inner score: the loss,
    P = softmax(S/τ) and what backward needs (1/τ folded into f before the product)."""
    ft, saved_f = _tower_forward(wf, x)
    gt, saved_g = _tower_forward(wg, y)
    at = ft * (1.0 / tau)
    loss, p = _info_nce(torch.mm(at.t(), gt), tau)
    return loss, p, ft, gt, saved_f, saved_g


def in_batch_step(weights: ReplicaWeights, x: torch.Tensor, y: torch.Tensor, tau: float):
    """One step's forward and backward of the in-batch InfoNCE on x, y (R, B, d), for either
    score: returns the R losses (detached) and sets ``weights.grads`` to the gradient of the
    summed losses (each replica's its own)."""
    if weights.native is not None:
        return weights.native.in_batch_step(x, y, tau)
    native.say_kernels("aten (the Python step)")
    batch = x.shape[1]
    losses, grads = [], []
    with torch.no_grad():
        for r, ((wf, wg), log_c) in enumerate(zip(weights.towers, weights.scales, strict=True)):
            xr, yr = _own(x[r]), _own(y[r])
            if log_c is None:
                loss, p, ft, gt, saved_f, saved_g = _in_batch(wf, wg, xr, yr, tau)
            else:
                s, ctx = _cosine_scores(wf, wg, xr, yr, log_c)
                loss, p = _info_nce(s * (1.0 / tau), tau)
            losses.append(loss)
            # ∂/∂S = (P − I)/B (the loss is τ·mean(lse − S_ii/τ))
            p.diagonal().sub_(1.0)
            p.mul_(1.0 / batch)
            if log_c is None:  # S = f gᵀ
                grads += _tower_backward(wf, saved_f, torch.mm(gt, p.t()))
                grads += _tower_backward(wg, saved_g, torch.mm(ft, p))
            else:
                grads += _cosine_backward(wf, wg, p, s, ctx, weights.learn_scale)
    weights.grads = grads
    return torch.cat(losses)


def in_batch_losses(weights: ReplicaWeights, x: torch.Tensor, y: torch.Tensor, tau: float):
    """The R in-batch losses on x, y (R, B, d) (validation), as :func:`in_batch_step` computes
    them, without a backward."""
    if weights.native is not None:
        return weights.native.in_batch_losses(x, y, tau)

    def one(r, wf, wg, log_c):
        xr, yr = _own(x[r]), _own(y[r])
        if log_c is None:
            return _in_batch(wf, wg, xr, yr, tau)[0]
        return _info_nce(_cosine_scores(wf, wg, xr, yr, log_c)[0] * (1.0 / tau), tau)[0]

    with torch.no_grad():
        pairs = zip(weights.towers, weights.scales, strict=True)
        return torch.cat([one(r, wf, wg, log_c) for r, ((wf, wg), log_c) in enumerate(pairs)])


class PopulationConstants:
    """What a population step would otherwise recompute every step: each replica's copy of the
    grid's nodes (n, 1), and the grid's weights shaped for one replica's score matrix."""

    def __init__(self, grid, gx: torch.Tensor, gy: torch.Tensor, tau: float):
        self.gx = [_own(gx[r]) for r in range(gx.shape[0])]
        self.gy = [_own(gy[r]) for r in range(gy.shape[0])]
        self.wx = grid.wx.reshape(-1, 1).contiguous()  # (n, 1)
        self.log_wy = grid.log_wy.reshape(1, -1).contiguous()  # (1, m)
        self.joint = grid.joint.reshape(gx.shape[1], gy.shape[1]).contiguous()


def _population(s: torch.Tensor, consts: PopulationConstants, tau: float):
    """One replica's population loss (1,) of its score matrix s (n, m) and ∂/∂S."""
    z = s * (1.0 / tau) + consts.log_wy
    # softmax, and lse from the row maximum as the sampled loss has it: torch's exp and
    # logsumexp take a far slower path where arguments fall below float32's range
    # (e^-87), which the grid's tail weights reach; its softmax does not
    p = torch.softmax(z, dim=1)
    lse = z.amax(1, keepdim=True) - torch.log(p.amax(1, keepdim=True))
    loss = tau * (lse * consts.wx).sum() - (consts.joint * s).sum()
    return loss.reshape(1), p.mul_(consts.wx).sub_(consts.joint)


def population_step(weights: ReplicaWeights, consts: PopulationConstants, tau: float):
    """One step's forward and backward of the population InfoNCE loss on ``grid``
    (:meth:`.evaluation.Grid.loss` of the score matrix f(gx) g(gy)ᵀ:
    τ Σ_i w_i logsumexp_j(S_ij/τ + log w_j) − Σ_ij joint_ij S_ij), for either score: the R
    losses (detached), ``weights.grads`` set. ∂/∂S = w_i softmax_j(…) − joint."""
    if weights.native is not None:
        return weights.native.population_step(consts, tau)
    losses, grads = [], []
    with torch.no_grad():
        towers = zip(weights.towers, weights.scales, consts.gx, consts.gy, strict=True)
        for (wf, wg), log_c, x_r, y_r in towers:
            if log_c is None:
                ft, saved_f = _tower_forward(wf, x_r)
                gt, saved_g = _tower_forward(wg, y_r)
                s = torch.mm(ft.t(), gt)
            else:
                s, ctx = _cosine_scores(wf, wg, x_r, y_r, log_c)
            loss, grad_s = _population(s, consts, tau)
            losses.append(loss)
            if log_c is None:
                grads += _tower_backward(wf, saved_f, torch.mm(gt, grad_s.t()))
                grads += _tower_backward(wg, saved_g, torch.mm(ft, grad_s))
            else:
                grads += _cosine_backward(wf, wg, grad_s, s, ctx, weights.learn_scale)
    weights.grads = grads
    return torch.cat(losses)
