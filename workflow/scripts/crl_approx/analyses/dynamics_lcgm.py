"""Training dynamics on the LCGM sweep (prediction 3 of docs/dynamics.md): over each run's
checkpoints, f against the span of the exact posteriors p(z=k|x) and g against the span of the log
ratios log p(z=k|y)/π_k, on the ``lcgm.n_checkpoint`` held-out validation pairs the checkpoints hold
(uniform weights), every function centred under the sample (:mod:`..numerics.alignment`).

Per checkpoint: the smallest and mean squared cosine over the target's directions (alignment) and
the captured fraction of the learned span (inside). Per D: the judged measure is the alignment when
D ≥ r (the centred target's rank) and the inside fraction when D < r; its final value, the first
step at which it reaches 1 − ``alignment_tol``, and the verdict.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..integrity import load_json, load_npz, same_job
from ..models.lcgm import LatentClassModel
from ..numerics.alignment import inside_fraction, subspace_alignment, whitened_basis
from ..numerics.claims import Verdict, combine
from .dynamics import checkpoint_series

log = logging.getLogger(__name__)


def side_measures(feat, target, w) -> dict:
    """Alignment (over the target's directions) and inside fraction (over the learned span's)."""
    a = subspace_alignment(feat, target, w)
    return {"min_cos2": a["min_cos2"], "mean_cos2": a["mean_cos2"]} | {
        "inside": inside_fraction(feat, target, w)
    }


def run_rows(post, ratio, steps, fs, gs, meta: dict) -> list[dict]:
    """One row per checkpoint of one run; ``post``, ``ratio`` the targets at its points."""
    w = np.full(post.shape[0], 1.0 / post.shape[0])
    rows = []
    for step, f, g in zip(steps, fs, gs, strict=True):
        row = meta | {"step": int(step)}
        for side, feat, target in (("f", f, post), ("g", g, ratio)):
            row |= {f"{side}_{k}": v for k, v in side_measures(feat, target, w).items()}
        rows.append(row)
    return rows


def judged(rows: pd.DataFrame, side: str, rank: int, d: int) -> pd.Series:
    """The measure prediction 3 judges: alignment (smallest cos²) at D ≥ rank, else inside."""
    return rows[f"{side}_min_cos2"] if d >= rank else rows[f"{side}_inside"]


def verdict(values, tol: float) -> tuple[str, str]:
    """Holds / fails on the mean over seeds; unresolved when the seeds straddle 1 − tol."""
    v, bar = np.asarray(values, float), 1 - tol
    if v.min() < bar <= v.max():
        return Verdict.UNRESOLVED, f"seeds straddle {bar:.2f} ({v.min():.3f}–{v.max():.3f})"
    mean = float(v.mean())
    return (Verdict.HOLDS if mean >= bar else Verdict.FAILS), f"mean {mean:.3f} vs {bar:.2f}"


def combined(verdicts) -> str:
    """Per D, both sides: fails if either fails, holds if both hold, else unresolved (the one
    combiner, :func:`crl_approx.numerics.claims.combine`)."""
    return combine(verdicts)


def pass_step(steps, values, bar: float) -> float:
    """The first recorded step at which ``values`` reaches ``bar``; inf if never."""
    hit = np.flatnonzero(np.asarray(values) >= bar)
    return float(np.asarray(steps)[hit[0]]) if hit.size else np.inf


def second_half_rise(steps, values) -> float:
    """How much ``values`` rose over the run's second half: the last value minus the one at the
    latest checkpoint at or before half the last step (0 with a single checkpoint)."""
    steps, values = np.asarray(steps, float), np.asarray(values, float)
    half = np.flatnonzero(steps <= steps[-1] / 2)
    return float(values[-1] - values[half[-1]]) if half.size else 0.0


def still_moving(finals, rises, tol: float) -> bool:
    """The convergence gate of a side's miss (added after the numbers, docs/dynamics.md): the mean
    judged measure is below the bar 1 − ``tol`` but rose over the second half of training by at
    least its distance to the bar, so the same rise once more (a 2× budget at that rate) would
    reach it; a miss read on such runs is not converged, not a fail."""
    final, rise = float(np.mean(finals)), float(np.mean(rises))
    return final < 1 - tol <= final + rise


def summary_table(rows: pd.DataFrame, ranks: dict, tol: float) -> pd.DataFrame:
    """One row per D: final measures (mean over seeds), pass step (median), verdicts (as
    registered), and per side whether the judged measure was still moving (:func:`still_moving`)."""
    out = []
    for d, cell in rows.groupby("D", sort=True):
        rec = {"D": int(d), "n_seeds": cell["seed"].nunique()}
        verdicts = []
        for side in ("f", "g"):
            finals, passes, rises = [], [], []
            for _, run in cell.groupby("seed"):
                run = run.sort_values("step")
                m = judged(run, side, ranks[side], d).to_numpy()
                finals.append(m[-1])
                passes.append(pass_step(run["step"], m, 1 - tol))
                rises.append(second_half_rise(run["step"], m))
            last = cell[cell["step"] == cell.groupby("seed")["step"].transform("max")]
            v = verdict(finals, tol)
            verdicts.append(v[0])
            rec |= {
                f"{side}_target_rank": ranks[side],
                f"{side}_judged": "alignment" if d >= ranks[side] else "inside",
                f"{side}_final_min_cos2": float(last[f"{side}_min_cos2"].mean()),
                f"{side}_final_mean_cos2": float(last[f"{side}_mean_cos2"].mean()),
                f"{side}_final_inside": float(last[f"{side}_inside"].mean()),
                f"{side}_judged_final": float(np.mean(finals)),
                f"{side}_judged_final_sd": float(np.std(finals, ddof=1)) if len(finals) > 1 else 0,
                f"{side}_pass_step": float(np.median(passes)),
                f"{side}_verdict": v[0],
                f"{side}_reason": v[1],
                f"{side}_second_half_rise": float(np.mean(rises)),
                f"{side}_still_moving": still_moving(finals, rises, tol),
            }
        rec["verdict"] = combined(verdicts)
        out.append(rec)
    return pd.DataFrame(out)


def run(
    lcgm: dict, train: dict, alignment_tol: float, metric_paths, ckpt_paths, pairs_paths, output
):
    """The ``measure_dynamics_lcgm`` rule; ``pairs_paths`` one file per seed (``seed~{s}``)."""
    from ..runtime import write_csv

    model = LatentClassModel.from_config(lcgm)
    pairs = {int(Path(p).parent.name.split("~")[1]): p for p in pairs_paths}
    ckpts = {Path(p).parent: p for p in ckpt_paths}
    per_epoch = lcgm["n_train"] // train["batch_size"]
    rows, ranks, targets = [], {}, {}
    for metrics_path in metric_paths:
        meta, rec = load_json(metrics_path, with_record=True)
        seed = meta["seed"]
        ck_path = ckpts[Path(metrics_path).parent]
        ck, ck_rec = load_npz(ck_path, with_record=True)
        same_job([(metrics_path, rec), (ck_path, ck_rec)])
        if seed not in targets:
            p = load_npz(pairs[seed])
            x, y = p["x_val"], p["y_val"]
            rows_used = ck["x_val_rows"]
            post = np.exp(model.log_post_x(x[rows_used]))
            targets[seed] = (post, model.log_ratio_y(y[rows_used]))
        post, ratio = targets[seed]
        w = np.full(post.shape[0], 1.0 / post.shape[0])
        rk = {"f": whitened_basis(post, w).shape[1], "g": whitened_basis(ratio, w).shape[1]}
        if ranks and rk != ranks:
            raise ValueError(f"{metrics_path}: target rank {rk} differs from {ranks}")
        ranks = rk
        steps, fs, gs = checkpoint_series(ck, per_epoch)
        rows += run_rows(post, ratio, steps, fs, gs, {"D": meta["D"], "seed": seed})
    rows = pd.DataFrame(rows)
    table = summary_table(rows, ranks, alignment_tol)
    log.info("LCGM dynamics (target ranks %s):\n%s", ranks, table.to_string(index=False))
    write_csv(rows, output.steps)
    write_csv(table, output.table)
    return table
