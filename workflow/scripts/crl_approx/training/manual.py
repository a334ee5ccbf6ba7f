"""The sampled step of the inner-product score, forward and backward by hand (issue 35).

Autograd builds a graph for every step: ~290 operator calls, of which a third are the graph's own
bookkeeping (the per-replica slicing functions of :mod:`.towers`, their copies and
concatenations, the engine's dispatch), ~4 ms of a ~10 ms step on one thread. This module issues,
replica by replica, the ATen calls autograd's derivative formulas issue (derivatives.yaml: bmm,
baddbmm, relu, mul by a scalar; the in-batch loss's own backward), on tensors of the same shapes
and layouts (every BLAS operand contiguous or transposed exactly as autograd passes it), and
writes each stacked parameter's gradient as the concatenation of its replicas' gradients, as
:class:`.towers._Unstack` does. So a step's numbers are bitwise those of the autograd step
(tests/unit/test_manual_step.py: the parameters after many steps, R = 1 and 3, both input
dimensions), and replica r still only meets kernels a job with that replica alone meets.

Written here: the inner-product score's sampled step (:func:`in_batch_step`) and its population
step on a quadrature grid (:func:`population_step`); the cosine score keeps autograd.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _tower_forward(ws, v: torch.Tensor):
    """One replica's tower on v (1, n, d): the output and what backward needs (each layer's
    input, and its output after the ReLU)."""
    saved = []
    last = len(ws) - 2
    h = v
    for i in range(0, len(ws), 2):
        z = torch.baddbmm(ws[i + 1], h, ws[i])
        out = torch.relu(z) if i < last else z
        saved.append((h, out))
        h = out
    return h, saved


def _tower_backward(ws, saved, grad: torch.Tensor) -> list[torch.Tensor]:
    """The gradients of one replica's weights and biases (order W0, b0, W1, b1, …) from the
    gradient of its output, by baddbmm's and relu's derivative formulas."""
    grads: list[torch.Tensor] = [None] * len(ws)  # type: ignore[list-item]
    last = len(ws) - 2
    for i in range(last, -1, -2):
        h, out = saved[i // 2]
        if i < last:  # relu: threshold_backward(grad, result, 0)
            grad = aten.threshold_backward(grad, out, 0)
        grads[i + 1] = grad.sum_to_size(ws[i + 1].shape)  # the bias, broadcast over rows
        grads[i] = h.transpose(1, 2).bmm(grad)
        if i > 0:  # the layer's input (the data itself needs none)
            grad = grad.bmm(ws[i].transpose(1, 2))
    return grads


def _replica(t: torch.Tensor, r: int) -> torch.Tensor:
    """Replica r's slice as a tensor of its own (the copy :func:`.towers.per_replica` makes)."""
    return t[r : r + 1].clone(memory_format=torch.contiguous_format)


def in_batch_step(model, x: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
    """One step's forward and backward of the in-batch InfoNCE on x, y (R, B, d) for the inner
    score: returns the R losses (detached) and sets every parameter's ``.grad``, bitwise as
    ``in_batch_loss(model, x, y, tau).sum().backward()`` would."""
    fs, gs = list(model.f), list(model.g)
    r_count, batch = x.shape[0], x.shape[1]
    losses, grads_f, grads_g = [], [], []
    with torch.no_grad():
        for r in range(r_count):
            wf = [_replica(p, r) for p in fs]
            wg = [_replica(p, r) for p in gs]
            fx, saved_f = _tower_forward(wf, _replica(x, r))
            gy, saved_g = _tower_forward(wg, _replica(y, r))
            # the loss: logits = (f/τ) gᵀ, softmax, lse from the row maximum (loops._InBatchInfoNCE)
            a = fx * (1.0 / tau)
            logits = torch.bmm(a, gy.transpose(1, 2))
            p = torch.softmax(logits, dim=2)
            lse = logits.amax(2) - torch.log(p.amax(2))
            losses.append(tau * (lse - logits.diagonal(dim1=1, dim2=2)).mean(1))
            # backward: ∂/∂z = τ(P − I)/B, then bmm's and the scalar product's formulas
            one = torch.ones(1, dtype=x.dtype, device=x.device)
            p.diagonal(dim1=1, dim2=2).sub_(1.0)
            p.mul_((one * (tau / batch))[:, None, None])
            grad_a = p.bmm(gy)
            grad_gy = a.transpose(1, 2).bmm(p).transpose(1, 2).contiguous()
            grad_fx = grad_a * (1.0 / tau)
            grads_f.append(_tower_backward(wf, saved_f, grad_fx))
            grads_g.append(_tower_backward(wg, saved_g, grad_gy))
        for params, per in ((fs, grads_f), (gs, grads_g)):
            for k, param in enumerate(params):
                param.grad = torch.cat([g[k].contiguous() for g in per])
    return torch.cat(losses)


class PopulationConstants:
    """What a population step recomputed every step though it never changes: each replica's copy
    of the grid's nodes (the copy :func:`_replica` makes), logsumexp's gradient τ·w_x and the joint
    term's −joint (autograd's expand-and-multiply of the loss's constant factors). Made once, by
    the same calls, so a step's numbers stay bitwise the same (tests/unit/test_manual_step.py);
    ~20 of a step's ~250 operator calls (issue 36's cost)."""

    def __init__(self, grid, gx: torch.Tensor, gy: torch.Tensor, tau: float):
        self.gx = [_replica(gx, r) for r in range(gx.shape[0])]
        self.gy = [_replica(gy, r) for r in range(gy.shape[0])]
        one = torch.ones(1, dtype=gx.dtype, device=gx.device)
        shape = (1, gx.shape[1], gy.shape[1])  # one replica's score matrix
        self.grad_lse = (one * tau)[:, None].expand(shape[:2]) * grid.wx
        self.neg_joint = (-one)[:, None, None].expand(shape) * grid.joint


def population_step(model, grid, consts: PopulationConstants, tau: float) -> torch.Tensor:
    """One step's forward and backward of the population InfoNCE loss on ``grid``
    (:meth:`.evaluation.Grid.loss` of the score matrices f(gx) g(gy)ᵀ, gx, gy (R, n, 1), whose
    replica copies ``consts`` holds) for the inner score: the R losses (detached), every
    parameter's ``.grad`` set, bitwise as ``grid.loss(model(gx, gy), tau).sum().backward()`` would
    (logsumexp's, the products' and the sums' derivative formulas; the score's two gradient paths
    added, which commutes)."""
    fs, gs = list(model.f), list(model.g)
    losses, grads_f, grads_g = [], [], []
    with torch.no_grad():
        for r, (x_r, y_r) in enumerate(zip(consts.gx, consts.gy, strict=True)):
            wf = [_replica(p, r) for p in fs]
            wg = [_replica(p, r) for p in gs]
            fx, saved_f = _tower_forward(wf, x_r)
            gy_r, saved_g = _tower_forward(wg, y_r)
            # StackedTwoTower.forward: bmm of f and gᵀ, gᵀ copied contiguous (per_replica)
            gt = gy_r.transpose(1, 2).clone(memory_format=torch.contiguous_format)
            s = torch.bmm(fx, gt)
            z = s / tau + grid.log_wy
            lse = torch.logsumexp(z, dim=-1)
            losses.append(tau * (lse * grid.wx).sum(-1) - (grid.joint * s).sum((-2, -1)))
            # backward from d(loss)/d(loss) = 1: the logsumexp path and the joint term's
            grad_z = consts.grad_lse.unsqueeze(-1) * (z - lse.unsqueeze(-1)).exp()
            grad_s = grad_z / tau + consts.neg_joint
            grad_fx = grad_s.bmm(gt.transpose(1, 2))
            grad_gy = fx.transpose(1, 2).bmm(grad_s).transpose(1, 2).contiguous()
            grads_f.append(_tower_backward(wf, saved_f, grad_fx))
            grads_g.append(_tower_backward(wg, saved_g, grad_gy))
        for params, per in ((fs, grads_f), (gs, grads_g)):
            for k, param in enumerate(params):
                param.grad = torch.cat([g[k].contiguous() for g in per])
    return torch.cat(losses)
