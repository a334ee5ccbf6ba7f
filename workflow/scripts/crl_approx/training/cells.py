"""One ``train_encoder`` job: every seed of a (dataset, objective, score, D) cell, trained at once
by the loops of :mod:`.loops`, evaluated per epoch, and written one folder per seed.

Per epoch the host waits for the device once (the epoch's losses), then checkpoints f and g of
every replica in float64: on the Gaussian mixture at the evaluation grid's nodes (so the population
excess of every checkpoint is exact up to quadrature error), on the LCGM at the first
``lcgm.n_checkpoint`` validation pairs of each seed. Optionally (``early_steps``, the dynamics
analysis's log-spaced steps) f and g are also saved after those optimiser steps: evaluations only
(a float64 copy of the towers, no random draw), so the training path is unchanged.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch

from ..integrity import load_npz_group
from ..runtime import phase
from .loops import (
    configure_threads,
    fit_fresh,
    fit_pairs,
    fit_population,
    select_device,
)
from .recorder import Recorder
from .towers import build_model

log = logging.getLogger(__name__)


# --- one job: every seed of a (dataset, objective, score, D) cell --------------------------------
def train_gmm(
    gmm,
    train,
    tau,
    dim,
    seeds,
    objective,
    threads,
    pairs=None,
    device="auto",
    steps=None,
    fresh=False,
    early_steps=(),
):
    """Train one model per seed on the Gaussian mixture, all seeds at once; returns (model,
    [metrics per seed], [checkpoints per seed]). Objective ``samples``: on each seed's pool of
    ``pairs`` (``steps`` steps, default ``train.epochs`` passes), or with ``fresh`` on a fresh
    stream for ``steps`` steps (``pairs`` then only give the validation pairs)."""
    from ..models.gmm import GaussianMixture
    from ..numerics.spectrum import operator_spectrum
    from .evaluation import Grid

    dev = select_device(device)
    configure_threads(threads, dev)
    mix = GaussianMixture.from_config(gmm)
    spec = operator_spectrum(mix, gmm["quadrature_nodes"])
    model = build_model(seeds, 1, 1, dim, train).to(dev, torch.float32)
    rec, l_star = quadrature_recorder(model, train, spec, tau, early_steps)
    t_start = time.perf_counter()
    if objective == "samples":
        if pairs is None:
            raise ValueError("objective 'samples' needs the sampled pairs")
        if fresh:
            steps = fit_fresh(model, mix, pairs, train, tau, dev, rec, steps)
        else:
            steps = fit_pairs(model, pairs, train, tau, dev, rec, steps)
    elif objective == "population":
        grid = Grid.from_mixture(mix, train["population_nodes"], torch.float32, dev)
        steps = fit_population(model, grid, train, tau, rec)
    else:
        raise ValueError(f"unknown objective {objective!r}")
    wall = time.perf_counter() - t_start
    return model, *quadrature_outputs(model, rec, spec, tau, l_star, "gmm", objective, steps, wall)


def quadrature_recorder(model, train, spec, tau, early_steps=()):
    """A recorder scoring every checkpoint exactly on ``spec``'s quadrature, and its L*."""
    from ..numerics.spectrum import infonce_loss

    l_star = infonce_loss(spec, tau * spec.pmi, tau)

    def evaluate(fx, gy):
        loss = infonce_loss(spec, fx @ gy.T, tau)
        return loss, loss - l_star

    nodes = (spec.quad.x[:, None], spec.quad.y[:, None])
    return Recorder(model, train, nodes, evaluate, early_steps), l_star


def quadrature_outputs(model, rec, spec, tau, l_star, dataset, objective, steps, wall):
    """Per replica, the metrics and checkpoints a :func:`quadrature_recorder` recorded."""
    from .evaluation import population_metrics

    metrics, ckpts = [], []
    with phase("metrics"):
        for r in range(model.replicas):
            ckpt = rec.checkpoints(r) | {"x_nodes": spec.quad.x, "y_nodes": spec.quad.y}
            score = ckpt["f"][-1] @ ckpt["g"][-1].T
            extra = population_metrics(spec, score, tau, l_star) | {"L_star": l_star}
            metrics.append(rec.metrics(r, dataset, objective, model.dim, tau, steps, wall, extra))
            ckpts.append(ckpt)
    return metrics, ckpts


def train_lcgm(
    lcgm,
    train,
    tau,
    dim,
    seeds,
    threads,
    pairs,
    device="auto",
    early_steps=(),
    steps=None,
    fresh=False,
):
    """Train one model per seed on LCGM pairs (objective ``samples``: no quadrature exists in 16
    dimensions), all seeds at once, for ``steps`` steps (default ``train.epochs`` passes), on
    each seed's training pairs or, with ``fresh``, on a fresh stream of the LCGM (every batch
    drawn anew: ``pairs`` then only give the validation pairs). Checkpoints hold f, g per epoch on
    the first ``lcgm.n_checkpoint`` validation pairs of each seed; the probes evaluate the final
    model."""
    from ..models.lcgm import LatentClassModel

    dev = select_device(device)
    configure_threads(threads, dev)
    d_x, d_y = pairs[0]["x_val"].shape[1], pairs[0]["y_val"].shape[1]
    model = build_model(seeds, d_x, d_y, dim, train).to(dev, torch.float32)
    n_ck = lcgm["n_checkpoint"]
    inputs = tuple(np.stack([p[k][:n_ck] for p in pairs]) for k in ("x_val", "y_val"))
    rec = Recorder(model, train, inputs, early_steps=early_steps)
    t_start = time.perf_counter()
    if fresh:
        truth = LatentClassModel.from_config(lcgm)
        steps = fit_fresh(model, truth, pairs, train, tau, dev, rec, steps)
    else:
        steps = fit_pairs(model, pairs, train, tau, dev, rec, steps)
    wall = time.perf_counter() - t_start
    metrics, ckpts = [], []
    with phase("metrics"):
        for r in range(model.replicas):
            objective = "fresh" if fresh else "samples"
            metrics.append(rec.metrics(r, "lcgm", objective, dim, tau, steps, wall))
            ckpts.append(rec.checkpoints(r) | {"x_val_rows": np.arange(n_ck)})
    return model, metrics, ckpts


# --- outputs and the rules ------------------------------------------------------------------------
def write_outputs(model, metrics: list, checkpoints: list, output, meta: dict) -> None:
    """Each seed's model, checkpoints and metrics, each file written atomically (metrics last);
    nothing is written before every seed's metrics are known to be valid JSON."""
    from .. import integrity
    from ..runtime import atomic_path
    from .towers import save_replica

    texts = [  # refuses NaN
        integrity.dumps_json(output.metrics[r], m, indent=1, allow_nan=False)
        for r, m in enumerate(metrics)
    ]
    with phase("write"):
        for r, text in enumerate(texts):
            with atomic_path(output.model[r]) as tmp:
                save_replica(model, r, meta, tmp, output.model[r])
            integrity.save_npz(output.checkpoints[r], checkpoints[r])
            with atomic_path(output.metrics[r]) as tmp:
                tmp.write_text(text)


def run(
    dataset, data, train, tau, dim, seeds, objective, threads, pairs_paths, output, early_steps=()
) -> list:
    """The ``train_encoder`` rule: every seed of one (dataset, objective, score, D) cell;
    ``data`` is the dataset's config section, ``pairs_paths`` one file per seed (or none),
    ``early_steps`` the optimiser steps after which f and g are also saved."""

    pairs = load_npz_group(pairs_paths) if pairs_paths else None
    if dataset == "gmm":
        model, metrics, ckpts = train_gmm(
            data, train, tau, dim, seeds, objective, threads, pairs, early_steps=early_steps
        )
        for m in metrics:
            log.info(
                "D=%d seed=%d %s %s: excess %.4e, L2 (self-normalised, squared) %.4e",
                dim,
                m["seed"],
                objective,
                model.score,
                m["mlp_excess_risk"],
                m["mlp_l2_distance"],
            )
    elif dataset == "lcgm":
        if objective != "samples":
            raise ValueError(f"the LCGM trains on sampled pairs only, not objective {objective!r}")
        model, metrics, ckpts = train_lcgm(
            data, train, tau, dim, seeds, threads, pairs, early_steps=early_steps
        )
        for m in metrics:
            log.info("D=%d seed=%d: val loss %.6f", dim, m["seed"], m["final_val_loss"])
    else:
        raise ValueError(f"unknown dataset {dataset!r}")
    return _finish(model, metrics, ckpts, output, dim, objective, train, tau)


def _finish(model, metrics, ckpts, output, dim, objective, train, tau) -> list:
    """Every seed's outputs of one training job, after the log line all training jobs end with."""
    from .towers import model_meta

    log.info("%d seeds trained together in %.1f s", model.replicas, metrics[0]["train_seconds"])
    write_outputs(model, metrics, ckpts, output, model_meta(model, dim, objective, train, tau))
    return metrics


def run_sample_size(data, train, tau, dim, seeds, pool, steps, threads, pairs_paths, output):
    """The ``train_sample_size`` rule: every seed of one cell of the sample-size study, trained
    with the `samples` objective for ``steps`` steps on a pool of sampled pairs (``pool`` its size,
    ``pairs_paths`` one file per seed) or, for ``pool == "fresh"``, on a fresh stream (validation
    pairs drawn as make_dataset draws them)."""
    from ..models.data import gmm_pairs
    from .budget import pair_counts

    fresh = pool == "fresh"
    if fresh:
        pairs = [gmm_pairs(data, seed, splits=("val",)) for seed in seeds]
    else:
        pairs = load_npz_group(pairs_paths)
    model, metrics, ckpts = train_gmm(
        data, train, tau, dim, seeds, "samples", threads, pairs, steps=steps, fresh=fresh
    )
    seen, distinct = pair_counts(pool, steps, train["batch_size"])
    for m in metrics:
        m["pool"] = "fresh" if fresh else int(pool)
        m["lr"] = train["lr"]
        m["pairs_seen"] = seen
        m["distinct_pairs"] = distinct
        log.info(
            "D=%d seed=%d pool %s, %d steps, lr %g: excess %.4e",
            dim,
            m["seed"],
            m["pool"],
            steps,
            train["lr"],
            m["mlp_excess_risk"],
        )
    return _finish(model, metrics, ckpts, output, dim, "samples", train, tau)
