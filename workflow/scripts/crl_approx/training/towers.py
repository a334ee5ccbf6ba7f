"""Two-tower encoders as stacked weights: R independent models (one per seed) trained as one.

Each tower is an MLP with ``depth`` linear layers of hidden width ``width`` (or per tower
``width_f``, ``width_g``: Experiment W) and ReLU between them, output dimension D; the score is
s(x, y) = f(x)ᵀ g(y) (``inner``, the paper's) or c·⟨f/|f|, g/|g|⟩ (``cosine``). Layer l of a
tower holds a weight of shape (R, fan_in, fan_out) and a bias of shape (R, 1, fan_out); replica r
only ever touches slice r of every parameter, so the replicas are independent models that share
a job. Every batched matrix product goes through
:func:`per_replica`: each replica is computed by the kernel a job with that replica alone uses (a
batch of 1), because BLAS libraries choose their kernel by the batch count (MKL on an Intel
AVX-512 host for a fan-in of 1, and on AMD hosts for a fan-out of 1), which changes the last bits.
So a seed's numbers do not depend, bitwise, on which other seeds share its job on any host.

Initialisation is per replica, from a generator seeded with that replica's seed, with the draws of
``torch.nn.Linear`` (weights and biases uniform on ±1/√fan_in, in nn.Linear's order): a seed's
model does not depend on which other seeds are stacked beside it, and it starts where the earlier
one-model-per-job trainer started for that seed. A saved model (``model.pt``) is one
replica (R = 1) of the same class.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

SCORES = ("inner", "cosine")
#: train.step_kernels: the sampled inner-score and the population steps' kernels
STEP_KERNELS = ("aten", "fused")


def _copies(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The R slices of ``t`` as tensors of their own (contiguous copies)."""
    return tuple(t[r : r + 1].clone(memory_format=torch.contiguous_format) for r in range(len(t)))


class _Unstack(torch.autograd.Function):
    """A stacked tensor's R slices as copies; backward stacks their gradients, contiguous (the
    layout a gradient arrives in changes the summation order of a later reduction)."""

    @staticmethod
    def forward(ctx, t: torch.Tensor):
        return _copies(t)

    @staticmethod
    def backward(ctx, *grads):
        return torch.cat([g.contiguous() for g in grads])


class _Stack(torch.autograd.Function):
    """The concatenation of R one-replica tensors; backward hands each its slice as a copy."""

    @staticmethod
    def forward(ctx, *parts: torch.Tensor):
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return _copies(grad)


def per_replica(fn, *tensors: torch.Tensor) -> torch.Tensor:
    """``fn`` run on each replica's slice of ``tensors`` (leading dimension R) and the results
    concatenated. Each slice, forward and backward, is a contiguous tensor of its own, also for
    R = 1, so replica r's numbers and gradients are bitwise those of ``fn`` on replica r alone,
    whatever the number of replicas: BLAS libraries choose their kernel by the batch count (MKL on
    an Intel AVX-512 host for a fan-in of 1; on AMD hosts too, for a fan-out of 1), which changes
    the last bits. Every computation that mixes a replica's elements goes through here."""
    slices = [_Unstack.apply(t) if t.requires_grad else _copies(t) for t in tensors]
    return _Stack.apply(*(fn(*parts) for parts in zip(*slices, strict=True)))


def _tower_shapes(d_in: int, width: int, depth: int, d_out: int) -> list[tuple[int, int]]:
    return list(itertools.pairwise([d_in] + [width] * (depth - 1) + [d_out]))


def init_tower(shapes, gen: torch.Generator) -> list[torch.Tensor]:
    """One replica's weights and biases in the order W0, b0, W1, b1, …, drawn exactly as
    ``torch.nn.Linear`` draws them from a generator in that state (weight (fan_out, fan_in) then
    bias, both uniform on ±1/√fan_in): seeded with the seed, this is the initialisation the
    one-model-per-job trainer had under ``torch.manual_seed(seed)``."""
    out = []
    for fan_in, fan_out in shapes:
        bound = 1.0 / math.sqrt(fan_in)
        weight = torch.empty(fan_out, fan_in).uniform_(-bound, bound, generator=gen)
        out.append(weight.T.contiguous())
        out.append(torch.empty(1, fan_out).uniform_(-bound, bound, generator=gen))
    return out


class StackedTwoTower(nn.Module):
    """R two-tower models with stacked parameters. Inputs are (R, n, d) (replica r sees rows
    [r]); ``embed_x``/``embed_y`` return the effective factors (for cosine √c·f/|f|), so the score
    of replica r is embed_x(x)[r] @ embed_y(y)[r]ᵀ either way."""

    def __init__(
        self,
        seeds,
        d_x: int,
        d_y: int,
        dim: int,
        width: int | tuple[int, int],
        depth: int,
        score: str = "inner",
        cosine_scale: float = 1.0,
        learn_scale: bool = True,
        step_kernels: str = "aten",
    ):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"unknown score {score!r} (allowed: {', '.join(SCORES)})")
        if step_kernels not in STEP_KERNELS:
            allowed = ", ".join(STEP_KERNELS)
            raise ValueError(f"unknown step_kernels {step_kernels!r} (allowed: {allowed})")
        self.seeds = [int(s) for s in seeds]
        self.score = score
        #: the sampled inner-score and population steps' kernels (train.step_kernels): ATen's, or
        #: the compiled step's fused ones (crl_approx.training.native; rounding differs)
        self.step_kernels = step_kernels
        self.d_x, self.d_y, self.dim = d_x, d_y, dim
        width_f, width_g = (width, width) if isinstance(width, int) else width
        shapes_f = _tower_shapes(d_x, width_f, depth, dim)
        shapes_g = _tower_shapes(d_y, width_g, depth, dim)
        per_seed = []
        for seed in self.seeds:
            gen = torch.Generator().manual_seed(seed)
            per_seed.append(init_tower(shapes_f, gen) + init_tower(shapes_g, gen))
        stacked = [torch.stack(ps) for ps in zip(*per_seed, strict=True)]
        n_f = 2 * len(shapes_f)
        self.f = nn.ParameterList(nn.Parameter(p) for p in stacked[:n_f])
        self.g = nn.ParameterList(nn.Parameter(p) for p in stacked[n_f:])
        if score == "cosine":
            log_scale = torch.full((len(self.seeds),), math.log(cosine_scale))
            if learn_scale:
                self.log_scale = nn.Parameter(log_scale)
            else:
                self.register_buffer("log_scale", log_scale)

    @property
    def replicas(self) -> int:
        return len(self.seeds)

    def forward_flops(self, n_x: int, n_y: int) -> int:
        """Matmul FLOPs of one forward pass of every replica on n_x queries and n_y candidates:
        each tower's layers (2·n·fan_in·fan_out each) and the n_x × n_y score matrix (2·n_x·n_y·D);
        a training step's forward and backward are 3× this (the FLOP limit's work model,
        benchmarks/flop_limit.py; elementwise work and the cosine score's norms not counted)."""

        def tower(ws, n):
            return sum(2 * n * w.shape[1] * w.shape[2] for w in ws[::2])

        per = tower(self.f, n_x) + tower(self.g, n_y) + 2 * n_x * n_y * self.dim
        return self.replicas * per

    @staticmethod
    def _tower(ws, h: torch.Tensor) -> torch.Tensor:
        last = len(ws) - 2
        for i in range(0, len(ws), 2):
            h = torch.baddbmm(ws[i + 1], h, ws[i])
            if i < last:
                h = torch.relu(h)
        return h

    def _embed(self, ws, v: torch.Tensor) -> torch.Tensor:
        if self.score == "inner":
            return per_replica(lambda v, *ws: self._tower(ws, v), v, *ws)

        def one(v, log_scale, *ws):
            scale = torch.exp(0.5 * log_scale)[:, None, None]
            return F.normalize(self._tower(ws, v), dim=2) * scale

        return per_replica(one, v, self.log_scale, *ws)

    def embed_x(self, x: torch.Tensor) -> torch.Tensor:
        return self._embed(self.f, x)

    def embed_y(self, y: torch.Tensor) -> torch.Tensor:
        return self._embed(self.g, y)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Score matrices S[r, i, j] = s_r(x_ri, y_rj)."""
        return per_replica(torch.bmm, self.embed_x(x), self.embed_y(y).transpose(1, 2))

    def replica(self, r: int) -> StackedTwoTower:
        """Replica r alone (R = 1), sharing nothing with this model."""
        one = copy.deepcopy(self)
        one.seeds = [self.seeds[r]]
        with torch.no_grad():
            for p in list(one.parameters()) + list(one.buffers()):
                p.data = p.data[r : r + 1].clone()
        return one

    def scales(self) -> list[float | None]:
        """The cosine score's scale c per replica (None for inner-product scores)."""
        if self.score != "cosine":
            return [None] * self.replicas
        return torch.exp(self.log_scale.detach()).cpu().tolist()


def tower_widths(train: dict) -> tuple[int, int]:
    """The hidden widths of f and g: ``width_f``, ``width_g`` where given (Experiment W varies one
    tower), else ``width`` for both."""
    return (train.get("width_f", train["width"]), train.get("width_g", train["width"]))


def build_model(seeds, d_x: int, d_y: int, dim: int, train: dict) -> StackedTwoTower:
    """The stacked towers a training config describes, one replica per seed."""
    return StackedTwoTower(
        seeds,
        d_x,
        d_y,
        dim,
        tower_widths(train),
        train["depth"],
        train.get("score", "inner"),
        train.get("cosine_scale", 1.0),
        train.get("cosine_scale_learnable", True),
        train.get("step_kernels", "aten"),
    )


def model_meta(model: StackedTwoTower, dim, objective, train, tau) -> dict:
    """What :func:`load_model` needs to rebuild one replica, saved next to its weights."""
    return {
        "dim": dim,
        "objective": objective,
        "train": train,
        "tau": tau,
        "d_x": model.d_x,
        "d_y": model.d_y,
    }


def save_replica(model: StackedTwoTower, r: int, meta: dict, tmp, path) -> None:
    """Replica ``r`` into ``tmp``, the atomic temporary of the output ``path`` (which its
    provenance record names)."""
    from ..integrity import save_torch

    one = model.replica(r)
    state = {k: v.detach().cpu() for k, v in one.state_dict().items()}
    save_torch(path, {"state_dict": state, "seed": one.seeds[0], **meta}, tmp)


def load_model(path) -> StackedTwoTower:
    """One trained model (R = 1) from a ``model.pt`` written by the trainer."""
    from ..integrity import load_torch

    saved = load_torch(path)
    model = build_model([saved["seed"]], saved["d_x"], saved["d_y"], saved["dim"], saved["train"])
    model.load_state_dict(saved["state_dict"])
    return model.eval()


def embed(model: StackedTwoTower, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The effective factors f(x), g(y) of every replica, in float64 on the CPU: inputs (n, d)
    (the same points for every replica) or (R, n, d); outputs (R, n, D)."""
    m64 = copy.deepcopy(model).to(device="cpu", dtype=torch.float64).eval()

    def stacked(a):
        t = torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64)
        return t.expand(model.replicas, *t.shape).contiguous() if t.dim() == 2 else t

    with torch.inference_mode():
        return m64.embed_x(stacked(x)).numpy(), m64.embed_y(stacked(y)).numpy()
