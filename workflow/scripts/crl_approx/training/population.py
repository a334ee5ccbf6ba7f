"""The ``population`` objective on any 1-D world given as quadratures: the towers of Table 1 trained
full-batch on the exact population InfoNCE loss on a training quadrature, evaluated per epoch on a
finer one.

A world enters as two :class:`~crl_approx.numerics.spectrum.OperatorSpectrum` records (nodes x, y;
probability weights wx, wy of P_X, P_Y; the PMI on the node grid): ``spec_train``, whose nodes
the loss is computed on (:func:`grid_of`: the :class:`.evaluation.Grid` with joint weights
wx·wy·exp(PMI)), and ``spec_eval``, on whose nodes every epoch's f and g are checkpointed in
float64 and whose loss gives the history's ``val_loss`` and ``excess_risk``:
L(f(x)ᵀg(y)) − L(τ·PMI), both on ``spec_eval``. This is the ``population`` branch of
:func:`.cells.train_gmm` with the mixture factored out (on a mixture's spectra it reproduces that
branch bitwise): the same towers, loop (:func:`.loops.fit_population`), per-epoch bookkeeping
and final metrics (:func:`.cells.quadrature_recorder`, :func:`.cells.quadrature_outputs`), so a
seed's numbers do not depend on the seeds stacked beside it.

A grid's conditional laws must be normalised: Σ_j wy_j exp(PMI_ij) = 1 for every x node. Where a
row's mass r_i differs from 1, the loss of s + c(x) is that of s plus Σ_i wx_i c_i (1 − r_i): the
loss is unbounded below and training diverges (measured on a channel grid whose joint mass was
1.085: a loss of −1e9 after 6000 steps). :func:`train_population` refuses such a grid
(:data:`ROW_MASS_TOLERANCE`); the channel's grids are discrete worlds with exact marginals
(:func:`crl_approx.numerics.smoothness.channel_spectrum`), the mixture's Gauss–Hermite rows are
1 to 1e-15.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch

from ..numerics.spectrum import OperatorSpectrum
from .cells import quadrature_outputs, quadrature_recorder
from .evaluation import Grid
from .loops import configure_threads, fit_population, select_device
from .towers import build_model

log = logging.getLogger(__name__)

#: the largest |Σ_j wy_j exp(PMI_ij) − 1| a grid may have (the mixture's Gauss–Hermite grids: 1e-15)
ROW_MASS_TOLERANCE = 1e-8


def row_mass(spec: OperatorSpectrum) -> np.ndarray:
    """r_i = Σ_j wy_j exp(PMI_ij): the mass of the conditional law of y given x_i on the grid."""
    return np.exp(spec.pmi) @ spec.quad.wy


def check_rows(spec: OperatorSpectrum, name: str) -> None:
    """Refuse a grid whose rows' conditional masses are not 1 (its loss is unbounded below)."""
    err = float(np.max(np.abs(row_mass(spec) - 1.0)))
    if not err <= ROW_MASS_TOLERANCE:
        raise ValueError(
            f"{name}: a row of wy·exp(PMI) sums to 1 ± {err:.3g} (tolerance "
            f"{ROW_MASS_TOLERANCE:g}): the population loss is unbounded below on it"
        )


def grid_of(spec: OperatorSpectrum, dtype=torch.float32, device="cpu") -> Grid:
    """The training grid of a spectrum's quadrature: nodes (n, 1), wx, log wy (−inf where a weight
    is 0) and the joint weights wx_i·wy_j·exp(PMI_ij), as tensors (computed in float64)."""
    q = spec.quad
    joint = q.wx[:, None] * q.wy[None, :] * np.exp(spec.pmi)
    with np.errstate(divide="ignore"):
        log_wy = np.log(q.wy)

    def t(a):
        return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)

    return Grid(t(q.x[:, None]), t(q.y[:, None]), t(q.wx), t(log_wy), t(joint))


def train_population(
    spec_train: OperatorSpectrum,
    spec_eval: OperatorSpectrum,
    train: dict,
    tau: float,
    dim: int,
    seeds,
    threads: int,
    dataset: str,
    device: str = "auto",
):
    """Train one model per seed (all seeds at once) on the population loss on ``spec_train``'s
    quadrature for ``train.population_steps`` steps in ``train.epochs`` checkpoints; returns
    (model, [metrics per seed], [checkpoints per seed]) as :func:`.cells.train_gmm` does, the
    metrics labelled ``dataset`` and objective ``population``, every number on ``spec_eval``.
    Both grids' rows must be normalised (:func:`check_rows`)."""
    check_rows(spec_train, "the training grid")
    check_rows(spec_eval, "the evaluation grid")
    dev = select_device(device)
    configure_threads(threads, dev)
    model = build_model(seeds, 1, 1, dim, train).to(dev, torch.float32)
    rec, l_star = quadrature_recorder(model, train, spec_eval, tau)
    grid = grid_of(spec_train, torch.float32, dev)
    log.info(
        "%s: training grid %d x %d nodes, evaluation grid %d x %d, L* = %.8f",
        dataset,
        spec_train.quad.x.size,
        spec_train.quad.y.size,
        spec_eval.quad.x.size,
        spec_eval.quad.y.size,
        l_star,
    )
    t_start = time.perf_counter()
    steps = fit_population(model, grid, train, tau, rec)
    wall = time.perf_counter() - t_start
    metrics, ckpts = quadrature_outputs(
        model, rec, spec_eval, tau, l_star, dataset, "population", steps, wall
    )
    return model, metrics, ckpts
