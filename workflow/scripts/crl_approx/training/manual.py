"""The inner score's training steps, forward and backward by hand, in fast layouts (issue 35).

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
(:func:`in_batch_losses`) and the population step on a quadrature grid (:func:`population_step`);
the cosine score keeps autograd.
"""

from __future__ import annotations

import torch

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

    def __init__(self, model):
        self.stacked = (list(model.f), list(model.g))
        fs, gs = self.stacked
        #: per replica: (f's weights, g's weights)
        self.towers = [(_weights(fs, r), _weights(gs, r)) for r in range(model.replicas)]
        #: every tensor, replica by replica (f's then g's), the optimiser's order
        self.tensors = [t for wf, wg in self.towers for t in wf + wg]
        #: the last step's gradients, in the order and layouts of ``tensors``
        self.grads: list[torch.Tensor] = []

    @torch.no_grad()
    def write_back(self) -> None:
        """The model's stacked parameters set to these weights (the last layers transposed back)."""
        for side, params in enumerate(self.stacked):
            last = len(params) - 2
            for r, tower in enumerate(self.towers):
                for k, param in enumerate(params):
                    w = tower[side][k]
                    param.data[r].copy_(w.t() if k >= last else w)

    def stacked_grads(self) -> list[torch.Tensor]:
        """The last step's gradients in the model's stacked layout, parameter by parameter
        (f's then g's), as autograd would set ``.grad`` (for tests and comparisons)."""
        n_f, n_g = (len(p) for p in self.stacked)
        per = n_f + n_g
        rows = [self.grads[r * per : (r + 1) * per] for r in range(len(self.towers))]
        out = []
        for lo, n in ((0, n_f), (n_f, n_g)):
            for k in range(n):
                parts = [row[lo + k].t() if k >= n - 2 else row[lo + k] for row in rows]
                out.append(torch.stack(parts))
        return out


def _in_batch(wf, wg, x: torch.Tensor, y: torch.Tensor, tau: float):
    """Forward of one replica's in-batch InfoNCE on x, y (B, d): the loss, P = softmax(S/τ)
    and what backward needs. lse from the row maximum (max P ≥ 1/B never underflows)."""
    ft, saved_f = _tower_forward(wf, x)
    gt, saved_g = _tower_forward(wg, y)
    at = ft * (1.0 / tau)
    logits = torch.mm(at.t(), gt)
    p = torch.softmax(logits, dim=1)
    lse = logits.amax(1) - torch.log(p.amax(1))
    loss = tau * (lse - logits.diagonal()).mean(0, keepdim=True)
    return loss, p, ft, gt, saved_f, saved_g


def in_batch_step(weights: ReplicaWeights, x: torch.Tensor, y: torch.Tensor, tau: float):
    """One step's forward and backward of the in-batch InfoNCE on x, y (R, B, d) for the inner
    score: returns the R losses (detached) and sets ``weights.grads`` to the gradient of the
    summed losses (each replica's its own)."""
    batch = x.shape[1]
    losses, grads = [], []
    with torch.no_grad():
        for r, (wf, wg) in enumerate(weights.towers):
            loss, p, ft, gt, saved_f, saved_g = _in_batch(wf, wg, _own(x[r]), _own(y[r]), tau)
            losses.append(loss)
            # ∂/∂S = (P − I)/B (the loss is τ·mean(lse − S_ii/τ)); S = f gᵀ
            p.diagonal().sub_(1.0)
            p.mul_(1.0 / batch)
            grads += _tower_backward(wf, saved_f, torch.mm(gt, p.t()))
            grads += _tower_backward(wg, saved_g, torch.mm(ft, p))
    weights.grads = grads
    return torch.cat(losses)


def in_batch_losses(weights: ReplicaWeights, x: torch.Tensor, y: torch.Tensor, tau: float):
    """The R in-batch losses on x, y (R, B, d) for the inner score (validation), as
    :func:`in_batch_step` computes them, without a backward."""
    with torch.no_grad():
        return torch.cat(
            [
                _in_batch(wf, wg, _own(x[r]), _own(y[r]), tau)[0]
                for r, (wf, wg) in enumerate(weights.towers)
            ]
        )


class PopulationConstants:
    """What a population step would otherwise recompute every step: each replica's copy of the
    grid's nodes (n, 1), and the grid's weights shaped for one replica's score matrix."""

    def __init__(self, grid, gx: torch.Tensor, gy: torch.Tensor, tau: float):
        self.gx = [_own(gx[r]) for r in range(gx.shape[0])]
        self.gy = [_own(gy[r]) for r in range(gy.shape[0])]
        self.wx = grid.wx.reshape(-1, 1).contiguous()  # (n, 1)
        self.log_wy = grid.log_wy.reshape(1, -1).contiguous()  # (1, m)
        self.joint = grid.joint.reshape(gx.shape[1], gy.shape[1]).contiguous()


def population_step(weights: ReplicaWeights, consts: PopulationConstants, tau: float):
    """One step's forward and backward of the population InfoNCE loss on ``grid``
    (:meth:`.evaluation.Grid.loss` of the score matrix f(gx) g(gy)ᵀ:
    τ Σ_i w_i logsumexp_j(S_ij/τ + log w_j) − Σ_ij joint_ij S_ij) for the inner score: the R
    losses (detached), ``weights.grads`` set. ∂/∂S = w_i softmax_j(…) − joint."""
    losses, grads = [], []
    with torch.no_grad():
        for (wf, wg), x_r, y_r in zip(weights.towers, consts.gx, consts.gy, strict=True):
            ft, saved_f = _tower_forward(wf, x_r)
            gt, saved_g = _tower_forward(wg, y_r)
            s = torch.mm(ft.t(), gt)
            z = s * (1.0 / tau) + consts.log_wy
            # softmax, and lse from the row maximum as the sampled loss has it: torch's exp and
            # logsumexp take a far slower path where arguments fall below float32's range
            # (e^-87), which the grid's tail weights reach; its softmax does not
            p = torch.softmax(z, dim=1)
            lse = z.amax(1, keepdim=True) - torch.log(p.amax(1, keepdim=True))
            loss = tau * (lse * consts.wx).sum() - (consts.joint * s).sum()
            losses.append(loss.reshape(1))
            grad_s = p.mul_(consts.wx).sub_(consts.joint)
            grads += _tower_backward(wf, saved_f, torch.mm(gt, grad_s.t()))
            grads += _tower_backward(wg, saved_g, torch.mm(ft, grad_s))
    weights.grads = grads
    return torch.cat(losses)
