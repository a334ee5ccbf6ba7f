"""The optimiser of every training loop: AdamW as torch's fused kernel, replica by replica, under
the configured learning-rate schedule."""

from __future__ import annotations

import math

import torch


class FusedAdamW:
    """AdamW (β = 0.9, 0.999, ε = 1e-8, decoupled weight decay) as one call of torch's fused
    kernel per step, the kernel ``torch.optim.AdamW(fused=True)`` runs, without torch.optim:
    constructing a torch.optim optimizer imports torch._dynamo (~1.2 s per job, measured in
    benchmarks/train_speed.py). The learning rate of step t = 0, 1, … comes from ``lr_at``.

    Every stacked parameter (leading dimension R) is updated as R tensors, one per replica (views):
    the kernel runs its vector body and scalar tail by the tensor's size (and splits it between
    threads by size), and the two round differently (fused multiply-adds), so an update of a
    replica's element would otherwise depend on how many replicas precede it."""

    def __init__(self, params, lr_at, weight_decay: float):
        self.params = [p for p in params if p.requires_grad]
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        # the replica views of the tensors updated in place, made once (slicing ~100 views a step
        # was ~0.3 ms of a ~3.5 ms population step); the gradients are new tensors every step
        views = [self._replicas(ts) for ts in (self.params, self.exp_avg, self.exp_avg_sq)]
        self._start(*views, lr_at, weight_decay)

    def _start(self, params, exp_avg, exp_avg_sq, lr_at, weight_decay) -> None:
        dev = params[0].device if params else None
        # one step count for every tensor: the kernel only reads it (one add a step; a count per
        # tensor, ~100 of them, took ~0.35 ms of a population step to increment)
        self.count = torch.zeros((), dtype=torch.float32, device=dev)
        self._views = (params, exp_avg, exp_avg_sq, [self.count] * len(params))
        self.lr_at, self.weight_decay, self.t = lr_at, weight_decay, 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @staticmethod
    def _replicas(tensors) -> list[torch.Tensor]:
        return [t[r] for t in tensors for r in range(len(t))]

    def step(self) -> None:
        """One update from every stacked parameter's ``.grad``."""
        self.update(self._replicas([p.grad for p in self.params]))

    @torch.no_grad()
    def update(self, grads: list[torch.Tensor]) -> None:
        """One update from ``grads``, one per replica tensor, in the order of the views."""
        self.count.add_(1)
        params, exp_avg, exp_avg_sq, steps = self._views
        torch._fused_adamw_(
            params,
            grads,
            exp_avg,
            exp_avg_sq,
            [],
            steps,
            amsgrad=False,
            lr=self.lr_at(self.t),
            beta1=0.9,
            beta2=0.999,
            weight_decay=self.weight_decay,
            eps=1e-8,
            maximize=False,
        )
        self.t += 1


class ReplicaAdamW(FusedAdamW):
    """The same AdamW on tensors that are already one replica's each (the hand-written steps'
    :class:`.manual.ReplicaWeights`); ``update`` takes their gradients, in their order."""

    def __init__(self, tensors, lr_at, weight_decay: float):
        self.params, self.tensors = [], tensors
        moments = [[torch.zeros_like(t) for t in tensors] for _ in range(2)]
        self._start(list(tensors), *moments, lr_at, weight_decay)

    def step(self) -> None:
        raise TypeError("ReplicaAdamW updates from its weights' gradients: call update(grads)")


def lr_schedule(train: dict, total_steps: int):
    """The learning rate of step t = 0, 1, …: ``cosine`` decays lr·(1 + cos(π t/T))/2 from lr to
    0 over the T steps of the run (torch's CosineAnnealingLR in closed form); ``constant``."""
    lr, total = float(train["lr"]), max(1, int(total_steps))
    if train["schedule"] == "cosine":
        return lambda t: 0.5 * lr * (1.0 + math.cos(math.pi * min(t, total) / total))
    return lambda t: lr


def make_optimizer(target, train: dict, total_steps: int) -> FusedAdamW:
    """AdamW with the configured learning rate, weight decay and schedule, on a model's stacked
    parameters or on a :class:`.manual.ReplicaWeights` (its ``tensors``)."""
    lr_at, decay = lr_schedule(train, total_steps), train["weight_decay"]
    if isinstance(target, torch.nn.Module):
        return FusedAdamW(target.parameters(), lr_at, decay)
    return ReplicaAdamW(target.tensors, lr_at, decay)
