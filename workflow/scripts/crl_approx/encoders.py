"""Two-tower MLP encoders trained with InfoNCE, and their population metrics.

Each tower is an MLP with ``depth`` linear layers of width ``width`` and ReLU between them, output
dimension D; the score is s(x, y) = f(x)ᵀ g(y). Two objectives:

* ``samples`` (the paper's stated protocol): in-batch InfoNCE on sampled pairs, queries x, the
  batch's y as candidates, loss τ·CE(S/τ, diag) with S the batch score matrix;
* ``population``: full-batch gradient descent on the exact population InfoNCE loss on a training
  quadrature (``train.population_nodes`` per component, coarser than the evaluation grid, so the
  evaluation is not on the training nodes).

The trained score is evaluated on the foundation's evaluation quadrature (``gmm.quadrature_nodes``),
in float64, so the reported excess risk and L2 distances are exact up to quadrature error.

Speed: data stay resident as tensors; each epoch permutes them once and slices contiguous batches;
the only host synchronisation is one per epoch (loss, divergence check); evaluation runs batched
under ``torch.inference_mode``. Determinism: the same config, seed and thread count give bitwise
identical numbers on a CPU.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import platform
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .gmm import GaussianMixture
from .runtime import atomic_path
from .spectrum import (
    OperatorSpectrum,
    expect_product,
    infonce_loss,
    mixture_quadrature,
    operator_spectrum,
    self_normalised,
)

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """A non-finite or exploding loss: the job fails instead of writing a number."""


# --- model ----------------------------------------------------------------------------------------
def mlp(d_in: int, width: int, depth: int, d_out: int) -> nn.Sequential:
    """``depth`` linear layers with ReLU between them."""
    dims = [d_in] + [width] * (depth - 1) + [d_out]
    layers: list[nn.Module] = []
    for i in range(depth):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class TwoTower(nn.Module):
    """Two MLP towers and a score: ``inner`` s = f(x)ᵀg(y) (the paper's), or ``cosine``
    s = c·⟨f/|f|, g/|g|⟩ with a scale c > 0 (learnable or fixed). ``embed_x``/``embed_y`` return the
    effective factors (for cosine: √c·f/|f|, √c·g/|g|), so s = embed_x(x)ᵀembed_y(y) either way."""

    def __init__(
        self,
        d_x: int,
        d_y: int,
        dim: int,
        width: int,
        depth: int,
        score: str = "inner",
        cosine_scale: float = 1.0,
        learn_scale: bool = True,
    ):
        super().__init__()
        if score not in ("inner", "cosine"):
            raise ValueError(f"unknown score {score!r} (allowed: inner, cosine)")
        self.score = score
        self.f = mlp(d_x, width, depth, dim)
        self.g = mlp(d_y, width, depth, dim)
        if score == "cosine":
            log_scale = torch.tensor(math.log(cosine_scale))
            if learn_scale:
                self.log_scale = nn.Parameter(log_scale)
            else:
                self.register_buffer("log_scale", log_scale)

    def _embed(self, tower: nn.Module, v: torch.Tensor) -> torch.Tensor:
        h = tower(v)
        if self.score == "inner":
            return h
        return F.normalize(h, dim=1) * torch.exp(0.5 * self.log_scale)

    def embed_x(self, x: torch.Tensor) -> torch.Tensor:
        return self._embed(self.f, x)

    def embed_y(self, y: torch.Tensor) -> torch.Tensor:
        return self._embed(self.g, y)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The score matrix S[i, j] = s(x_i, y_j)."""
        return self.embed_x(x) @ self.embed_y(y).T


def build_model(d_x: int, d_y: int, dim: int, train: dict) -> TwoTower:
    """The two towers a training config describes."""
    return TwoTower(
        d_x,
        d_y,
        dim,
        train["width"],
        train["depth"],
        train.get("score", "inner"),
        train.get("cosine_scale", 1.0),
        train.get("cosine_scale_learnable", True),
    )


# --- runtime --------------------------------------------------------------------------------------
def select_device(prefer: str = "auto") -> torch.device:
    """CUDA when a GPU is visible (and not disabled), else CPU, with a log line either way."""
    if prefer != "cpu" and torch.cuda.is_available():
        dev = torch.device("cuda")
        log.info("device: cuda (%s)", torch.cuda.get_device_name(0))
    else:
        dev = torch.device("cpu")
        log.info("device: cpu (no GPU visible%s)", "" if prefer == "auto" else ", forced")
    return dev


def seed_everything(seed: int, threads: int, device: torch.device) -> None:
    """Seed torch and fix the thread count: on a CPU the kernels used here are deterministic for a
    fixed thread count. On CUDA, also ask for deterministic algorithms (not on CPU: the call
    imports torch's compiler stack, ~6 s, for nothing)."""
    torch.manual_seed(seed)
    torch.set_num_threads(max(1, int(threads)))
    # Subnormal floats (Adam's second moments of tiny gradients) are ~100x slower on x86 CPUs;
    # flushing them to zero changes nothing measurable and speeds up late epochs.
    torch.set_flush_denormal(True)
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)


def make_optimizer(model: nn.Module, train: dict, total_steps: int):
    """AdamW (fused: one kernel for all parameters) with the configured schedule."""
    opt = torch.optim.AdamW(
        model.parameters(), lr=train["lr"], weight_decay=train["weight_decay"], fused=True
    )
    if train["schedule"] == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, total_steps))
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    return opt, sched


def check_loss(value: float, epoch: int, train: dict) -> None:
    if not math.isfinite(value) or value > train["max_loss"]:
        raise TrainingDiverged(
            f"training loss {value!r} at epoch {epoch} is not finite or exceeds "
            f"train.max_loss = {train['max_loss']}: stopping without writing results "
            f"(try a smaller train.lr)"
        )


# --- objectives -----------------------------------------------------------------------------------
def infonce_batch(model: TwoTower, x: torch.Tensor, y: torch.Tensor, tau: float) -> torch.Tensor:
    """In-batch InfoNCE on paired rows, scaled by τ to match the population loss."""
    scores = model(x, y) / tau
    return tau * F.cross_entropy(scores, torch.arange(x.shape[0], device=x.device))


def samples_epoch(model, opt, sched, x, y, batch: int, tau: float, gen) -> torch.Tensor:
    """One epoch of in-batch InfoNCE over resident tensors: one permutation, contiguous slices, no
    host synchronisation. Returns the mean training loss as a 0-d tensor (not yet synchronised)."""
    n_batches = x.shape[0] // batch  # full batches only: every batch has `batch` candidates
    perm = torch.randperm(x.shape[0], generator=gen).to(x.device)
    xp, yp = x[perm], y[perm]
    total = torch.zeros((), dtype=x.dtype, device=x.device)
    for b in range(n_batches):
        sl = slice(b * batch, (b + 1) * batch)
        loss = infonce_batch(model, xp[sl], yp[sl], tau)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        total += loss.detach()
    return total / n_batches


@torch.inference_mode()
def infonce_blocks(model: TwoTower, x: torch.Tensor, y: torch.Tensor, tau: float, batch: int):
    """The in-batch loss averaged over consecutive full blocks of ``batch`` pairs (validation)."""
    n = (x.shape[0] // batch) * batch
    total = torch.zeros((), dtype=x.dtype, device=x.device)
    for i in range(0, n, batch):
        total += infonce_batch(model, x[i : i + batch], y[i : i + batch], tau)
    return float(total) / max(1, n // batch)


@dataclass
class Grid:
    """A quadrature grid as tensors: nodes, weights and the joint weights w_x w_y r."""

    x: torch.Tensor
    y: torch.Tensor
    wx: torch.Tensor
    log_wy: torch.Tensor
    joint: torch.Tensor

    @classmethod
    def from_mixture(cls, mix: GaussianMixture, nodes: int, dtype, device) -> Grid:
        q = mixture_quadrature(mix, nodes)
        pmi = mix.pmi(q.x, q.y)
        joint = q.wx[:, None] * q.wy[None, :] * np.exp(pmi)
        with np.errstate(divide="ignore"):
            log_wy = np.log(q.wy)

        def t(a):
            return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)

        return cls(t(q.x[:, None]), t(q.y[:, None]), t(q.wx), t(log_wy), t(joint))

    def loss(self, scores: torch.Tensor, tau: float) -> torch.Tensor:
        lse = torch.logsumexp(scores / tau + self.log_wy[None, :], dim=1)
        return tau * (self.wx @ lse) - (self.joint * scores).sum()


# --- evaluation -----------------------------------------------------------------------------------
def embed(model: TwoTower, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The effective factors f(x), g(y) of a trained model, in float64 on the CPU."""
    m64 = copy.deepcopy(model).to(device="cpu", dtype=torch.float64).eval()
    with torch.inference_mode():
        return m64.embed_x(torch.from_numpy(x)).numpy(), m64.embed_y(torch.from_numpy(y)).numpy()


def factor_values(model: TwoTower, spec: OperatorSpectrum) -> tuple[np.ndarray, np.ndarray]:
    """f at the x nodes and g at the y nodes of the evaluation grid, in float64."""
    return embed(model, spec.quad.x[:, None], spec.quad.y[:, None])


def population_metrics(spec: OperatorSpectrum, score: np.ndarray, tau: float, l_star: float):
    """Excess risk and L2 distances of a score matrix on the evaluation grid.

    ``mlp_l2_distance`` (the headline) is the squared L2(P_X ⊗ P_Y) distance between PMI and the
    self-normalised score ĥ = s/τ − log E_{y'~P_Y} exp(s(x, y')/τ); it matches the paper's column
    (PAPER.md). The variants are kept for the reader.
    """
    h = score / tau
    diff_selfnorm = spec.pmi - self_normalised(spec, h)
    diff_raw = spec.pmi - h
    # remove the L2-best c(x): c(x) = E_{P_Y}[PMI − h | x]
    centred = diff_raw - (diff_raw @ spec.quad.wy)[:, None]
    l2 = expect_product(spec, diff_selfnorm**2)
    return {
        "mlp_excess_risk": infonce_loss(spec, score, tau) - l_star,
        "mlp_l2_distance": l2,
        "l2_selfnorm_unsquared": math.sqrt(max(l2, 0.0)),
        "l2_best_cx_squared": expect_product(spec, centred**2),
        "l2_raw_squared": expect_product(spec, diff_raw**2),
    }


# --- training -------------------------------------------------------------------------------------
@dataclass
class EpochRecord:
    epoch: int
    train_loss: float
    val_loss: float
    seconds: float
    excess_risk: float


def _log_epoch(rec: EpochRecord, total: int) -> None:
    log.info(
        "epoch %d/%d train_loss %.6f val_loss %.6f excess %.4e (%.2f s)",
        rec.epoch,
        total,
        rec.train_loss,
        rec.val_loss,
        rec.excess_risk,
        rec.seconds,
    )


def fit_pairs(model, pairs: dict, train: dict, tau: float, seed: int, dev, dtype, end_epoch) -> int:
    """The ``samples`` objective: in-batch InfoNCE over the sampled training pairs for
    ``train.epochs`` epochs; ``end_epoch(epoch, train_loss, val_loss, t0)`` runs after each epoch
    (val_loss: the in-batch loss on the validation pairs). Returns the number of optimiser steps."""
    x = torch.as_tensor(pairs["x_train"], dtype=dtype, device=dev)
    y = torch.as_tensor(pairs["y_train"], dtype=dtype, device=dev)
    xv = torch.as_tensor(pairs["x_val"], dtype=dtype, device=dev)
    yv = torch.as_tensor(pairs["y_val"], dtype=dtype, device=dev)
    batch = train["batch_size"]
    n_batches = x.shape[0] // batch
    if n_batches == 0:
        raise ValueError(f"{x.shape[0]} training pairs are fewer than train.batch_size = {batch}")
    epochs = train["epochs"]
    opt, sched = make_optimizer(model, train, epochs * n_batches)
    gen = torch.Generator().manual_seed(seed)
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        model.train()
        mean_loss = samples_epoch(model, opt, sched, x, y, batch, tau, gen)
        train_loss = float(mean_loss)  # the one host sync per epoch
        check_loss(train_loss, epoch, train)
        model.eval()
        val_loss = infonce_blocks(model, xv, yv, tau, batch)
        end_epoch(epoch, train_loss, val_loss, t0)
    return epochs * n_batches


def _run_info(dev) -> dict:
    return {
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": platform.machine(),
    }


def learned_scale(model: TwoTower) -> float | None:
    """The cosine score's scale c (None for inner-product scores)."""
    return float(torch.exp(model.log_scale.detach())) if model.score == "cosine" else None


def train_gmm(
    gmm: dict,
    train: dict,
    tau: float,
    dim: int,
    seed: int,
    objective: str,
    threads: int,
    pairs: dict | None = None,
    device: str = "auto",
):
    """Train one two-tower model on the Gaussian mixture; return (model, metrics, checkpoints)."""
    dev = select_device(device)
    seed_everything(seed, threads, dev)
    dtype = torch.float32
    mix = GaussianMixture.from_config(gmm)
    spec = operator_spectrum(mix, gmm["quadrature_nodes"])
    l_star = infonce_loss(spec, tau * spec.pmi, tau)
    model = build_model(1, 1, dim, train).to(dev, dtype)
    epochs = train["epochs"]
    history: list[EpochRecord] = []
    ckpt_f, ckpt_g = [], []

    def end_epoch(epoch, train_loss, val_loss, t0):
        """Checkpoint f, g on the evaluation grid; val_loss None means the population loss there."""
        fx, gy = factor_values(model, spec)
        ckpt_f.append(fx)
        ckpt_g.append(gy)
        loss = infonce_loss(spec, fx @ gy.T, tau)
        val = loss if val_loss is None else val_loss
        rec = EpochRecord(epoch, train_loss, val, time.perf_counter() - t0, loss - l_star)
        history.append(rec)
        _log_epoch(rec, epochs)

    t_start = time.perf_counter()
    if objective == "samples":
        if pairs is None:
            raise ValueError("objective 'samples' needs the sampled pairs")
        steps = fit_pairs(model, pairs, train, tau, seed, dev, dtype, end_epoch)
    elif objective == "population":
        grid = Grid.from_mixture(mix, train["population_nodes"], dtype, dev)
        steps = train["population_steps"]
        opt, sched = make_optimizer(model, train, steps)
        per_epoch = [steps // epochs + (1 if i < steps % epochs else 0) for i in range(epochs)]
        for epoch, n_steps in enumerate(per_epoch, start=1):
            t0 = time.perf_counter()
            model.train()
            total = torch.zeros((), dtype=dtype, device=dev)
            for _ in range(n_steps):
                loss = grid.loss(model(grid.x, grid.y), tau)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                total += loss.detach()
            train_loss = float(total) / max(1, n_steps)
            check_loss(train_loss, epoch, train)
            model.eval()
            # validation: the population loss on the (finer) evaluation grid
            end_epoch(epoch, train_loss, None, t0)
    else:
        raise ValueError(f"unknown objective {objective!r}")
    wall = time.perf_counter() - t_start

    fx, gy = ckpt_f[-1], ckpt_g[-1]
    metrics = {
        "dataset": "gmm",
        "objective": objective,
        "score": model.score,
        "D": int(dim),
        "seed": int(seed),
        "tau": tau,
        **population_metrics(spec, fx @ gy.T, tau, l_star),
        "cosine_scale": learned_scale(model),
        "final_train_loss": history[-1].train_loss,
        "final_val_loss": history[-1].val_loss,
        "L_star": l_star,
        "steps": int(steps),
        "train_seconds": wall,
        **_run_info(dev),
        "history": [rec.__dict__ for rec in history],
    }
    checkpoints = {
        "epoch": np.arange(1, len(history) + 1),
        "f": np.stack(ckpt_f),
        "g": np.stack(ckpt_g),
        "x_nodes": spec.quad.x,
        "y_nodes": spec.quad.y,
    }
    return model, metrics, checkpoints


def train_lcgm(
    lcgm: dict,
    train: dict,
    tau: float,
    dim: int,
    seed: int,
    threads: int,
    pairs: dict,
    device: str = "auto",
):
    """Train one two-tower model on LCGM pairs (objective ``samples``: no quadrature exists in 16
    dimensions). Checkpoints hold f, g per epoch on the first ``lcgm.n_checkpoint`` validation
    pairs; the probes (rule probe_lcgm) evaluate the final model."""
    dev = select_device(device)
    seed_everything(seed, threads, dev)
    dtype = torch.float32
    d_x, d_y = pairs["x_train"].shape[1], pairs["y_train"].shape[1]
    model = build_model(d_x, d_y, dim, train).to(dev, dtype)
    n_ck = lcgm["n_checkpoint"]
    xc, yc = pairs["x_val"][:n_ck], pairs["y_val"][:n_ck]
    history: list[dict] = []
    ckpt_f, ckpt_g = [], []

    def end_epoch(epoch, train_loss, val_loss, t0):
        fx, gy = embed(model, xc, yc)
        ckpt_f.append(fx)
        ckpt_g.append(gy)
        rec = {
            "epoch": epoch,
            "train_loss": train_loss,
            "val_loss": val_loss,
            "seconds": time.perf_counter() - t0,
        }
        history.append(rec)
        log.info(
            "epoch %d/%d train_loss %.6f val_loss %.6f",
            epoch,
            train["epochs"],
            train_loss,
            val_loss,
        )

    t_start = time.perf_counter()
    steps = fit_pairs(model, pairs, train, tau, seed, dev, dtype, end_epoch)
    metrics = {
        "dataset": "lcgm",
        "objective": "samples",
        "score": model.score,
        "D": int(dim),
        "seed": int(seed),
        "tau": tau,
        "cosine_scale": learned_scale(model),
        "final_train_loss": history[-1]["train_loss"],
        "final_val_loss": history[-1]["val_loss"],
        "steps": int(steps),
        "train_seconds": time.perf_counter() - t_start,
        **_run_info(dev),
        "history": history,
    }
    checkpoints = {
        "epoch": np.arange(1, len(history) + 1),
        "f": np.stack(ckpt_f),
        "g": np.stack(ckpt_g),
        "x_val_rows": np.arange(len(xc)),
    }
    return model, metrics, checkpoints


def write_outputs(model: TwoTower, metrics: dict, checkpoints: dict, output, meta: dict) -> None:
    """Model, metrics and checkpoints, each written atomically (metrics last)."""
    text = json.dumps(metrics, indent=1, allow_nan=False) + "\n"  # refuses NaN before any write
    with atomic_path(output.model) as tmp:
        torch.save({"state_dict": model.state_dict(), **meta}, tmp)
    with atomic_path(output.checkpoints) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **checkpoints)
    with atomic_path(output.metrics) as tmp:
        tmp.write_text(text)


def model_meta(model: TwoTower, dim, seed, objective, train, tau) -> dict:
    """What :func:`load_model` needs to rebuild the towers, saved next to the weights."""
    return {
        "dim": dim,
        "seed": seed,
        "objective": objective,
        "train": train,
        "tau": tau,
        "d_x": model.f[0].in_features,
        "d_y": model.g[0].in_features,
    }


def load_model(path) -> TwoTower:
    """A trained model from a ``model.pt`` written by :func:`write_outputs`."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model = build_model(saved["d_x"], saved["d_y"], saved["dim"], saved["train"])
    model.load_state_dict(saved["state_dict"])
    return model.eval()


def run(dataset, data, train, tau, dim, seed, objective, threads, pairs_path, output) -> dict:
    """The ``train_encoder`` rule: ``data`` is the dataset's config section."""
    pairs = dict(np.load(pairs_path)) if pairs_path else None
    if dataset == "gmm":
        model, metrics, ckpt = train_gmm(data, train, tau, dim, seed, objective, threads, pairs)
        log.info(
            "D=%d seed=%d %s %s: excess %.4e, L2 (self-normalised, squared) %.4e, %.1f s",
            dim,
            seed,
            objective,
            model.score,
            metrics["mlp_excess_risk"],
            metrics["mlp_l2_distance"],
            metrics["train_seconds"],
        )
    elif dataset == "lcgm":
        if objective != "samples":
            raise ValueError(f"the LCGM trains on sampled pairs only, not objective {objective!r}")
        model, metrics, ckpt = train_lcgm(data, train, tau, dim, seed, threads, pairs)
        log.info(
            "D=%d seed=%d: val loss %.6f, %.1f s",
            dim,
            seed,
            metrics["final_val_loss"],
            metrics["train_seconds"],
        )
    else:
        raise ValueError(f"unknown dataset {dataset!r}")
    write_outputs(model, metrics, ckpt, output, model_meta(model, dim, seed, objective, train, tau))
    return metrics
