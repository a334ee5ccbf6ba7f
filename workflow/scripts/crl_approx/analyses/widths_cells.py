"""The training jobs of Experiment W (rules ``train_widths``, ``train_widths_gmm``,
``train_widths_widest``): one job runs one sweep (:func:`run_sweep`), every width of one tower
on one world, each width a cell (:func:`run_cell`): every seed of one (world, tower, width,
budget) trained by the trainer of Table 1 and the LCGM sweep (:mod:`crl_approx.training.cells`)
with the hidden width of one tower changed (or of both: the widest cell), its excess measured.

* mixture (``gmm``): the population excess of the final model on the evaluation quadrature
  (``mlp_excess_risk``, the number Table 1 reports), written by the trainer;
* LCGM (``lcgm``, and ``lcgm_d<d>`` with d_x = d_y = d): trained on a fresh stream (every batch
  drawn anew from the model: no training pool, so no estimation error of one) for the cell's
  steps; validated on the seed's validation stream; the held-out InfoNCE excess of the LCGM
  sweep (``heldout_excess``: in-batch loss of the learned score minus that of τ·PMI on the seed's
  probe-test pairs, blocks of ``lcgm.n_candidates``), the learned score's with the probe rule's
  function (:func:`.probes.block_infonce`), τ·PMI's in closed form (:func:`bayes_block_infonce`).
  The validation and probe-test pairs are drawn here from the
  seed's own streams (the LCGM sweep's, :func:`..models.data.lcgm_pairs`), so no W cell reads
  the LCGM's training pool: its size (``lcgm.n_train``) reruns none.

The mixture's cell at train.width is not trained here: it is the existing run (rule
train_encoder), whose excess the assembly reads from its metrics.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
from scipy.special import logsumexp

from ..integrity import load_npz_group
from ..models.lcgm import LatentClassModel
from ..training import cells
from ..training.towers import embed, model_meta
from .probes import block_infonce

log = logging.getLogger(__name__)


def cell_train(train: dict, tower: str, width: int) -> dict:
    """The training keys of a cell: ``train`` with the hidden width of ``tower`` ("f" or "g")
    set to ``width`` (the other tower keeps train.width), or of both ("both": the widest cell)."""
    if tower not in ("f", "g", "both"):
        raise ValueError(f"unknown tower {tower!r} (allowed: f, g, both)")
    names = ("f", "g") if tower == "both" else (tower,)
    return dict(train) | {f"width_{t}": int(width) for t in names}


def bayes_block_infonce(truth: LatentClassModel, x, y, tau: float, block: int) -> float:
    """:func:`.probes.block_infonce` of the exact score τ·PMI on the pairs (x, y), in O(n·K) per
    block instead of O(n²): with s = τ·PMI, s/τ = PMI and exp PMI(x, y) = Σ_k p(k|x)·p(k|y)/π_k,
    so logsumexp_j PMI(x_i, y_j) = logsumexp_k [log p(k|x_i) + logsumexp_j log(p(k|y_j)/π_k)]
    (the block's n × n matrix is never formed; equal to the matrix computation up to rounding,
    tested)."""
    n_blocks = x.shape[0] // block
    total = 0.0
    for b in range(n_blocks):
        sl = slice(b * block, (b + 1) * block)
        la, lb = truth.log_post_x(x[sl]), truth.log_ratio_y(y[sl])
        rows = logsumexp(la + logsumexp(lb, axis=0), axis=1)  # logsumexp_j PMI(x_i, y_j)
        diag = logsumexp(la + lb, axis=1)  # PMI(x_i, y_i)
        total += tau * (rows - np.log(block)).mean() - tau * diag.mean()
    return total / max(1, n_blocks)


def heldout_excess(model, lcgm: dict, tau: float, tests: list[dict]) -> list[dict]:
    """Per replica: the held-out InfoNCE of the learned score (its score blocks in float32) and of
    τ·PMI (float64) on that seed's probe-test pairs, and their difference (the LCGM sweep's
    ``heldout_excess``, whose learned-score blocks are float64)."""
    truth = LatentClassModel.from_config(lcgm)
    x = np.stack([t["x_test"] for t in tests])
    y = np.stack([t["y_test"] for t in tests])
    # the learned score's blocks in float32 (embed's float64 features rounded): the 4 blocks of
    # 4096² scores per seed, exp-bound, cost 1.4 s instead of 3.3 s per cell (issue 36's cost
    # cap); the excess moves by ~1e-8, far below the ε ladder (tests/unit/test_widths_cells.py)
    fx, gy = (a.astype(np.float32) for a in embed(model, x, y))
    block, out = lcgm["n_candidates"], []
    for r, t in enumerate(tests):
        n = t["x_test"].shape[0]
        loss = block_infonce(lambda sl, r=r: fx[r][sl] @ gy[r][sl].T, n, tau, block)
        star = bayes_block_infonce(truth, t["x_test"], t["y_test"], tau, block)
        out.append(
            {"heldout_infonce": loss, "heldout_infonce_bayes": star, "heldout_excess": loss - star}
        )
    return out


def run_cell(
    world: str,
    data: dict,
    train: dict,
    tau: float,
    dim: int,
    seeds,
    objective: str,
    cell: dict,
    threads: int,
    pairs_paths,
    output,
    steps=None,
    lcgm_streams=None,
) -> list:
    """One cell: ``cell`` = {"tower", "width", "budget"}; ``pairs_paths`` one file of sampled
    pairs per seed for the mixture's objective samples (else none); ``steps`` the LCGM cell's
    step count (the budget's multiple of widths.lcgm_steps); ``lcgm_streams`` each seed's
    validation and probe-test pairs on an LCGM world (drawn here when not given: they depend on
    the world and the seed only, so a sweep draws them once for all its widths)."""
    from ..models.data import lcgm_pairs

    tower, width = cell["tower"], int(cell["width"])
    params = cell_train(train, tower, width)
    if world == "gmm":
        pairs = load_npz_group(pairs_paths) if pairs_paths else None
        model, metrics, ckpts = cells.train_gmm(
            data, params, tau, dim, seeds, objective, threads, pairs
        )
        key = "mlp_excess_risk"
    elif world.startswith("lcgm"):
        pairs = lcgm_streams or [lcgm_pairs(data, s, splits=("val", "test")) for s in seeds]
        model, metrics, ckpts = cells.train_lcgm(
            data, params, tau, dim, seeds, threads, pairs, steps=steps, fresh=True
        )
        for m, h in zip(metrics, heldout_excess(model, data, tau, pairs), strict=True):
            m.update(h)
        key = "heldout_excess"
    else:
        raise ValueError(f"unknown world {world!r}")
    for m in metrics:
        m |= {"world": world, "tower": tower, "width": width, "budget": cell["budget"]}
        log.info(
            "%s tower %s width %d seed %d: %s %.4e", world, tower, width, m["seed"], key, m[key]
        )
    log.info("%d seeds trained together in %.1f s", model.replicas, metrics[0]["train_seconds"])
    meta = model_meta(model, dim, objective, params, tau)
    cells.write_outputs(model, metrics, ckpts, output, meta)
    return metrics


def cell_outputs(output, width: int, seeds) -> SimpleNamespace:
    """One width's files among a sweep job's outputs: per kind (model, metrics, checkpoints)
    the paths of that width's cell, in the order of ``seeds`` (found by their folders, not by
    their position in the job's list)."""
    picked = {}
    for kind in ("model", "metrics", "checkpoints"):
        paths = [str(p) for p in getattr(output, kind) if f"/width~{int(width)}/" in str(p)]
        ordered = []
        for s in seeds:
            match = [p for p in paths if f"/seed~{int(s)}/" in p]
            if len(match) != 1:
                raise ValueError(f"{kind} of width {width} seed {s}: {len(match)} outputs, not 1")
            ordered.append(match[0])
        picked[kind] = ordered
    return SimpleNamespace(**picked)


def run_sweep(world: str, data: dict, seeds, tower: str, widths, budget: str, output, **kw):
    """One job of Experiment W: the cells of ``widths`` (in order) of one tower on one world,
    each by :func:`run_cell` into its own files among ``output``; on an LCGM world each seed's
    validation and probe-test pairs drawn once. A cell's numbers are those of a job that trains
    it alone (tests/unit/test_widths_cells.py), so merging cells into a job moves no number."""
    from ..models.data import lcgm_pairs

    streams = None
    if world.startswith("lcgm"):
        streams = [lcgm_pairs(data, s, splits=("val", "test")) for s in seeds]
    out = []
    for width in widths:
        cell = {"tower": tower, "width": int(width), "budget": budget}
        sub = cell_outputs(output, width, seeds)
        out += run_cell(world, data, seeds=seeds, cell=cell, output=sub, lcgm_streams=streams, **kw)
    return out
