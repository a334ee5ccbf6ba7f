"""Training loops: every seed of a (dataset, objective, score, D) cell trained as one stacked model.

Two objectives:

* ``samples`` (the paper's stated protocol): in-batch InfoNCE on sampled pairs, queries x, the
  batch's y as candidates, loss τ·CE(S/τ, diag) with S the batch score matrix;
* ``population``: full-batch gradient descent on the exact population InfoNCE loss on a training
  quadrature (``train.population_nodes`` per component).

The job around these loops (evaluation, checkpoints, outputs) is :mod:`crl_approx.training.cells`.

Batching seeds: replica r of :class:`.towers.StackedTwoTower` is seed r's model, with its
own initialisation, its own data (the seed's pairs), its own permutation stream and its own loss;
every product and reduction runs on the replica's slice alone (:func:`.towers.per_replica`), the
optimiser (fused AdamW) updates each replica as a tensor of its own, and the summed loss gives each
replica exactly the gradient of its own loss. So a seed's numbers do not depend on which seeds
share its job, bitwise, on any host with a fixed thread count: the kernels a replica meets are
those of a job that trains it alone (tests/unit/test_batched_training.py).

Speed: data stay resident as tensors on the device; each epoch permutes them once into a
(batches, R, batch, d) layout and slices contiguous batches; every step's forward and backward
are written by hand (:mod:`.manual`; the autograd path, kept for comparison, runs the in-batch
loss as one autograd function: softmax forward, (P − I)·scale backward); the host waits
for the device once per epoch, for the epoch's losses (the checkpoint copy follows it).
"""

from __future__ import annotations

import logging
import math
import os
import time

import torch

from ..runtime import count_flops, phase
from .batches import fresh_batches, pool_batches, stack_pairs
from .host import configure_threads, select_device  # noqa: F401 (the jobs import them here)
from .optim import make_optimizer
from .towers import StackedTwoTower, per_replica

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """A non-finite or exploding loss: the job fails instead of writing a number."""


def check_losses(values, seeds, epoch: int, train: dict) -> None:
    """Any seed's loss not finite or above train.max_loss fails the whole job."""
    limit = train["max_loss"]
    bad = [(s, v) for s, v in zip(seeds, values, strict=True) if not math.isfinite(v) or v > limit]
    if bad:
        which = ", ".join(f"seed {s}: {v!r}" for s, v in bad)
        raise TrainingDiverged(
            f"training loss at epoch {epoch} is not finite or exceeds train.max_loss = "
            f"{train['max_loss']} ({which}): stopping without writing results for any seed "
            f"(try a smaller train.lr)"
        )


# --- objectives -----------------------------------------------------------------------------------
class _InBatchInfoNCE(torch.autograd.Function):
    """τ·mean_i [logsumexp_j z_rij − z_rii] per replica r, for logits z = S/τ of shape (R, B, B).

    Forward: P = softmax(z) in one pass; logsumexp from the row maximum, lse = max z − log max P
    (max P ≥ 1/B, so it never underflows). Backward: ∂/∂z = τ·(P − I)/B per replica, in place."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, tau: float) -> torch.Tensor:
        p = torch.softmax(logits, dim=2)
        lse = logits.amax(2) - torch.log(p.amax(2))
        loss = tau * (lse - logits.diagonal(dim1=1, dim2=2)).mean(1)
        ctx.save_for_backward(p)
        ctx.tau = tau
        return loss

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (p,) = ctx.saved_tensors
        p.diagonal(dim1=1, dim2=2).sub_(1.0)  # the graph is never run twice: reuse P's memory
        p.mul_((grad * (ctx.tau / p.shape[1]))[:, None, None])
        return p, None


def in_batch_loss(model: StackedTwoTower, x: torch.Tensor, y: torch.Tensor, tau: float):
    """In-batch InfoNCE of every replica on its rows of x, y (R, B, d): a tensor of R losses,
    each computed on its replica alone (:func:`~crl_approx.training.towers.per_replica`)."""

    def one(fx, gy):
        return _InBatchInfoNCE.apply(torch.bmm(fx * (1.0 / tau), gy.transpose(1, 2)), tau)

    return per_replica(one, model.embed_x(x), model.embed_y(y))


def run_steps(model, opt, step_loss, n_steps: int, after_step=None, reads_model=None):
    """``n_steps`` optimiser steps, each on the R losses ``step_loss()`` returns (the next batch's,
    or the population loss); the mean loss per replica as a tensor (not yet synchronised).
    ``after_step(t)``, if given, runs after each step with the run's step count t (it must not
    change the model or draw random numbers); the model's parameters are current when it runs
    (for the hand-written steps, whose weights live in ``step_loss.weights``, at the steps
    ``reads_model(t)`` names, every step if not given) and when this returns."""
    p = next(model.parameters())
    total = torch.zeros(model.replicas, dtype=p.dtype, device=p.device)
    weights = getattr(step_loss, "weights", None)  # the hand-written steps' (.manual)
    if weights is not None and getattr(opt, "tensors", None) is not weights.tensors:
        raise TypeError("the hand-written steps need make_optimizer(step_loss.weights, ...)")
    for _ in range(n_steps):
        loss = step_loss()
        if weights is not None:
            opt.update(weights.grads)
        else:
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
        total += loss.detach()
        if after_step is not None:
            if weights is not None and (reads_model is None or reads_model(opt.t)):
                weights.write_back()
            after_step(opt.t)
    if weights is not None:
        weights.write_back()
    return total / max(1, n_steps)


def by_hand_step(model) -> bool:
    """Whether the model's steps run by hand (:mod:`.manual`, either score): yes, unless
    CRL_AUTOGRAD_STEP=1 (benchmarks/step_levers.py compares)."""
    return os.environ.get("CRL_AUTOGRAD_STEP") != "1"


def batch_loss(model, batches, tau: float, by_hand: bool | None = None):
    """``step_loss`` of :func:`run_steps` for minibatches: in-batch InfoNCE on the next batch. The
    step's forward and backward are written by hand, for either score
    (:func:`.manual.in_batch_step`, autograd's to float32 rounding; ``by_hand=False`` or
    CRL_AUTOGRAD_STEP=1 keeps autograd, for benchmarks/step_levers.py)."""
    by_hand = by_hand_step(model) if by_hand is None else by_hand
    if by_hand:
        from .manual import ReplicaWeights, in_batch_step

        weights = ReplicaWeights(model)

        def step_loss():
            xb, yb = next(batches)
            return in_batch_step(weights, xb, yb, tau)

        step_loss.weights = weights
        return step_loss

    def step_loss():
        xb, yb = next(batches)
        return in_batch_loss(model, xb, yb, tau)

    return step_loss


def shuffled_epoch(model, train: dict, x, y, gens, tau: float, total_steps: int | None = None):
    """One epoch of the ``samples`` objective over the pairs x, y (R, n, d): a fresh permutation
    per replica from its generator, full batches of ``train.batch_size`` only, a fresh optimiser
    whose schedule spans ``total_steps`` (default the epoch; benchmarks/train_speed.py); the
    mean loss per replica, unsynchronised."""
    batch = train["batch_size"]
    step_loss = batch_loss(model, pool_batches(x, y, gens, batch), tau)
    n_steps = x.shape[1] // batch
    opt = make_optimizer(getattr(step_loss, "weights", model), train, total_steps or n_steps)
    return run_steps(model, opt, step_loss, n_steps)


def split_steps(total: int, parts: int) -> list[int]:
    """``total`` steps in ``parts`` checkpoints, as even as integers allow (earlier ones longer)."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


@torch.inference_mode()
def block_losses(model, x: torch.Tensor, y: torch.Tensor, tau: float, batch: int, weights=None):
    """The in-batch loss per replica, averaged over consecutive full blocks of ``batch`` pairs
    (validation), as a tensor: by the training step's forward
    (:func:`.manual.in_batch_losses`, on ``weights``, the steps' :class:`.manual.ReplicaWeights`,
    or the model's copied once), so validation and training round alike."""
    from .manual import ReplicaWeights, in_batch_losses

    if by_hand_step(model):
        on, losses = weights or ReplicaWeights(model), in_batch_losses
    else:
        on, losses = model, in_batch_loss
    n = (x.shape[1] // batch) * batch
    total = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
    for i in range(0, n, batch):
        total += losses(on, x[:, i : i + batch], y[:, i : i + batch], tau)
    return total / max(1, n // batch)


def fit_pairs(model, pairs: list[dict], train: dict, tau: float, dev, end_epoch, steps=None) -> int:
    """The ``samples`` objective on each seed's pool of training pairs: ``steps`` optimiser steps
    (default: ``train.epochs`` passes, ``train.epochs × ⌊n / batch⌋`` steps), epoch after epoch
    over the pool. Returns the number of steps."""
    dtype = torch.float32
    x, y = (stack_pairs(pairs, k, dtype, dev) for k in ("x_train", "y_train"))
    batch = train["batch_size"]
    n_batches = x.shape[1] // batch
    if n_batches == 0:
        raise ValueError(f"{x.shape[1]} training pairs are fewer than train.batch_size = {batch}")
    # one generator per seed: a seed's permutations do not depend on the other seeds
    gens = [torch.Generator().manual_seed(s) for s in model.seeds]
    total = train["epochs"] * n_batches if steps is None else int(steps)
    val = tuple(stack_pairs(pairs, k, dtype, dev) for k in ("x_val", "y_val"))
    return fit_stream(model, pool_batches(x, y, gens, batch), total, val, train, tau, end_epoch)


def fit_fresh(model, data, val_pairs: list[dict], train: dict, tau: float, dev, end_epoch, steps):
    """The ``samples`` objective on a fresh stream: ``steps`` steps, every batch drawn anew from
    ``data`` (the mixture or the LCGM; each pair seen once). Returns the number of steps."""
    dtype = torch.float32
    batches = fresh_batches(data, model.seeds, train["batch_size"], dtype, dev)
    val = tuple(stack_pairs(val_pairs, k, dtype, dev) for k in ("x_val", "y_val"))
    return fit_stream(model, batches, int(steps), val, train, tau, end_epoch)


def fit_stream(model, batches, total: int, val, train: dict, tau: float, end_epoch) -> int:
    """``total`` steps of in-batch InfoNCE on ``batches`` under one lr schedule, split into
    ``train.epochs`` checkpoints. ``end_epoch(epoch, train_loss, val_loss, t0)`` runs after each
    with tensors of R losses (val: the in-batch loss on the validation pairs ``val``); its
    ``after_step`` method, if any, after every step (see :func:`run_steps`)."""

    step_loss = batch_loss(model, batches, tau)
    weights = getattr(step_loss, "weights", None)
    batch = train["batch_size"]
    step_loss.points = (batch, batch)

    def validate():
        return block_losses(model, *val, tau, batch, weights)

    validate.flops = (val[0].shape[1] // batch) * model.forward_flops(batch, batch)
    return fit_checkpoints(model, step_loss, total, train, end_epoch, validate)


def population_loss(model, grid, tau: float, by_hand: bool | None = None):
    """``step_loss`` of :func:`run_steps` for the ``population`` objective: the exact population
    loss on ``grid`` of every replica. Forward and backward are written by hand, for either
    score (:func:`.manual.population_step`, autograd's to rounding; ``by_hand=False`` or
    CRL_AUTOGRAD_STEP=1 keeps autograd, for benchmarks/step_levers.py)."""
    gx, gy = (g.expand(model.replicas, *g.shape).contiguous() for g in (grid.x, grid.y))
    by_hand = by_hand_step(model) if by_hand is None else by_hand
    if by_hand:
        from .manual import PopulationConstants, ReplicaWeights, population_step

        consts, weights = PopulationConstants(grid, gx, gy, tau), ReplicaWeights(model)

        def step_loss():
            return population_step(weights, consts, tau)

        step_loss.weights = weights
        return step_loss

    def step_loss():
        return grid.loss(model(gx, gy), tau)

    return step_loss


def fit_population(model, grid, train: dict, tau: float, end_epoch) -> int:
    """The ``population`` objective: full-batch steps on the exact population loss on ``grid``,
    split into ``train.epochs`` checkpoints (val_loss None: the caller evaluates on its grid)."""
    step_loss = population_loss(model, grid, tau)
    step_loss.points = (grid.x.shape[0], grid.y.shape[0])
    steps = train["population_steps"]
    return fit_checkpoints(model, step_loss, steps, train, end_epoch, lambda: None)


def fit_checkpoints(model, step_loss, total: int, train: dict, end_epoch, validate) -> int:
    """The one training loop: ``total`` steps on ``step_loss`` under one lr schedule, split into
    ``train.epochs`` checkpoints; after each, ``end_epoch(epoch, train_loss, validate(), t0)``;
    ``end_epoch.after_step``, if any, after every step (``end_epoch.reads_model(t)``, if any:
    whether it reads the model after step t). Counts the steps' matmul work (``step_loss.points``:
    queries and candidates per step) and validation's (``validate.flops`` per call), where given
    (:func:`crl_approx.runtime.count_flops`). Returns ``total``."""
    opt = make_optimizer(getattr(step_loss, "weights", model), train, total)
    points = getattr(step_loss, "points", None)
    step_flops = 3 * model.forward_flops(*points) if points else 0
    after_step = getattr(end_epoch, "after_step", None)
    reads_model = getattr(end_epoch, "reads_model", None)
    for epoch, n_steps in enumerate(split_steps(total, train["epochs"]), start=1):
        t0 = time.perf_counter()
        model.train()
        with phase("steps"):
            train_loss = run_steps(model, opt, step_loss, n_steps, after_step, reads_model)
        count_flops("steps", n_steps * step_flops)
        model.eval()
        with phase("validation"):
            val_loss = validate()
        count_flops("validation", getattr(validate, "flops", 0))
        with phase("evaluation"):  # the epoch's losses (one host sync), checkpoints, excess
            end_epoch(epoch, train_loss, val_loss, t0)
    return total
