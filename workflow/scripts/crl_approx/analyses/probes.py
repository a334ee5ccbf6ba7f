"""Experiment 3, the learned side: linear probes of trained towers against the LCGM's exact
posteriors and log ratios, canonical correlations, the held-out InfoNCE excess, and the elbow of
the D sweep (rules probe_lcgm and assemble_lcgm). The data model is :mod:`..models.lcgm`; this
module reads it and the trained towers, never the other way round."""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import numpy as np

from ..models.lcgm import LatentClassModel

if TYPE_CHECKING:  # pandas is imported where a table is built: the training jobs need none
    import pandas as pd

log = logging.getLogger(__name__)


# --- probes ---------------------------------------------------------------------------------------
def _with_intercept(a: np.ndarray) -> np.ndarray:
    return np.hstack([np.ones((a.shape[0], 1)), a])


def probe_r2(feat_fit, target_fit, feat_test, target_test) -> np.ndarray:
    """Least squares with intercept from features to each target column, fitted on one sample and
    scored on another: R²_k = 1 − Σ(t − t̂)² / Σ(t − mean t)² on the test sample, per target."""
    coef, *_ = np.linalg.lstsq(_with_intercept(feat_fit), target_fit, rcond=None)
    resid = target_test - _with_intercept(feat_test) @ coef
    total = ((target_test - target_test.mean(0)) ** 2).sum(0)
    return 1.0 - (resid**2).sum(0) / total


def canonical_correlations(a: np.ndarray, b: np.ndarray, rel_tol: float = 1e-10) -> np.ndarray:
    """Canonical correlations between the columns of ``a`` and ``b`` (descending, min(rank) many):
    singular values of Q_aᵀ Q_b for orthonormal bases of the centred column spaces."""

    def basis(m):
        m = m - m.mean(0)
        u, s, _ = np.linalg.svd(m, full_matrices=False)
        return u[:, s > rel_tol * s[0]] if s.size and s[0] > 0 else u[:, :0]

    qa, qb = basis(a), basis(b)
    return np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), 0.0, 1.0)


def row_logsumexp(a: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """log Σ_j exp(a_ij) per row of a finite matrix, shifted by the row maximum: the plain numpy
    form, ~5x faster than scipy.special.logsumexp on the 4096 × 4096 blocks of the probes (whose
    generality — signs, weights, infinities — costs 2.4 s of a 3.3 s probe per seed; measured).
    ``overwrite``: work in ``a`` itself (it is left holding exp(a − max)), which saves two
    matrix-sized allocations and halves the time on those blocks, bitwise the same result."""
    m = a.max(axis=1, keepdims=True)
    if not overwrite:
        return np.log(np.exp(a - m).sum(axis=1)) + m[:, 0]
    np.subtract(a, m, out=a)
    np.exp(a, out=a)
    return np.log(a.sum(axis=1)) + m[:, 0]


def block_infonce(score_block, n: int, tau: float, block: int) -> float:
    """In-batch InfoNCE averaged over consecutive blocks of ``block`` held-out pairs:
    τ·mean_i [logsumexp_j s(x_i, y_j)/τ − log n] − mean_i s(x_i, y_i), the candidates y_j being the
    block's targets (draws from P_Y). ``score_block(sl)`` returns the score matrix of the pairs in
    slice ``sl``. One block-sized buffer holds s/τ and its exponentials for every block."""
    n_blocks = n // block
    total, buf = 0.0, None
    for b in range(n_blocks):
        s = score_block(slice(b * block, (b + 1) * block))
        if buf is None or buf.shape != s.shape or buf.dtype != s.dtype:
            buf = np.empty_like(s)
        np.divide(s, tau, out=buf)
        lse = row_logsumexp(buf, overwrite=True)
        total += tau * (lse - np.log(block)).mean() - np.diag(s).mean()
    return total / max(1, n_blocks)


def features(towers, data: dict) -> dict:
    """The learned f and g (float64) on the probe-fit and probe-test splits of ``data``."""
    from ..training.towers import embed

    feats = {}
    for split in ("fit", "test"):
        f, g = embed(towers, data[f"x_{split}"], data[f"y_{split}"])
        feats[f"f_{split}"], feats[f"g_{split}"] = f[0], g[0]  # one model: replica 0
    return feats


def probe_metrics(model: LatentClassModel, feats: dict, data: dict, tau: float, block: int):
    """All probe numbers for one trained model: ``feats`` holds f and g on the fit and test splits
    (f_fit, g_fit, f_test, g_test), ``data`` the raw splits (x_fit, y_fit, x_test, y_test)."""
    post_fit = np.exp(model.log_post_x(data["x_fit"]))
    post_test = np.exp(model.log_post_x(data["x_test"]))
    ratio_fit = model.log_ratio_y(data["y_fit"])
    ratio_test = model.log_ratio_y(data["y_test"])
    r2_f = probe_r2(feats["f_fit"], post_fit, feats["f_test"], post_test)
    r2_g = probe_r2(feats["g_fit"], ratio_fit, feats["g_test"], ratio_test)
    cc_g = canonical_correlations(feats["g_test"], ratio_test)
    cc_f = canonical_correlations(feats["f_test"], post_test)
    k = model.K
    ft, gt = feats["f_test"], feats["g_test"]
    xt, yt = data["x_test"], data["y_test"]
    n = xt.shape[0]
    loss = block_infonce(lambda sl: ft[sl] @ gt[sl].T, n, tau, block)
    loss_star = block_infonce(lambda sl: tau * model.pmi(xt[sl], yt[sl]), n, tau, block)
    return {
        "probe_r2_f": float(r2_f.mean()),
        "probe_r2_g": float(r2_g.mean()),
        # the elbow's headline curve: the mean of the two probe R²
        "alignment_quality": float((r2_f.mean() + r2_g.mean()) / 2),
        "probe_r2_f_per_class": r2_f.tolist(),
        "probe_r2_g_per_class": r2_g.tolist(),
        "cancorr_g": cc_g.tolist(),
        "cancorr_f": cc_f.tolist(),
        # fraction of the K-dimensional target subspace captured: sum of rho_i^2 over K
        "cc_capture_g": float((cc_g**2).sum() / k),
        "cc_capture_f": float((cc_f**2).sum() / k),
        "heldout_infonce": loss,
        "heldout_infonce_bayes": loss_star,
        "heldout_excess": loss - loss_star,
    }


# --- elbow ----------------------------------------------------------------------------------------
def elbow(dims, quality, fraction: float, increasing: bool = True, log: bool = False):
    """The smallest D from which the curve *stays* in the band that closes ``fraction`` of the gap
    between the worst and the best D of the sweep: q(D′) ≥ q_min + fraction·(q_max − q_min) for
    every D′ ≥ D (for a decreasing curve such as an excess risk, q(D′) ≤ q_max − fraction·(q_max
    − q_min)). ``log``: the band is taken on log10 q (excess and loss curves, which fall over
    decades: on a linear scale their first step dominates). It uses nothing but the curve: the
    elbow sits at K because quality saturates there, not because K is known. None when even the
    last D lies outside the band; a NaN or (on a log scale) a value ≤ 0 is an error."""
    d = np.asarray(dims)
    q = np.asarray(quality, float)
    order = np.argsort(d)
    d, q = d[order], q[order]
    if not np.isfinite(q).all():
        raise ValueError(f"the elbow's curve is not finite at D = {d[~np.isfinite(q)].tolist()}")
    if log:
        if (q <= 0).any():
            raise ValueError(f"a log-scale elbow needs q > 0; D = {d[q <= 0].tolist()} is not")
        q = np.log10(q)
    lo, hi = q.min(), q.max()
    if increasing:
        ok = q >= lo + fraction * (hi - lo)
    else:
        ok = q <= hi - fraction * (hi - lo)
    stays = np.logical_and.accumulate(ok[::-1])[::-1]  # inside the band here and at every larger D
    return int(d[np.argmax(stays)]) if stays.any() else None


#: the curves the elbow detector reads; the first is the headline "alignment quality"
#: (column, increasing, log scale): R² and captures are bounded (linear); the excess falls over
#: decades (log)
ELBOW_CURVES = (
    ("alignment_quality", True, False),
    ("probe_r2_f", True, False),
    ("probe_r2_g", True, False),
    ("cc_capture_g", True, False),
    ("heldout_excess", False, True),
)
PROBE_METRICS = (
    "alignment_quality",
    "probe_r2_f",
    "probe_r2_g",
    "cc_capture_f",
    "cc_capture_g",
    "heldout_excess",
    "final_val_loss",
    "train_seconds",
)


# --- rules ----------------------------------------------------------------------------------------
def run_probe(lcgm: dict, tau: float, dim: int, seeds, model_paths, pairs_paths, output) -> list:
    """The ``probe_lcgm`` rule, for every seed of one D: probes and held-out excess of each trained
    model, plus the learned features of the first ``lcgm.n_feature_plot`` probe-test points (for
    the 2-D view). One job per D: the model and imports are loaded once, not once per seed."""
    from .. import integrity
    from ..training.towers import load_model

    model = LatentClassModel.from_config(lcgm)
    n_plot = lcgm["n_feature_plot"]
    out = []
    for i, seed in enumerate(seeds):
        data = integrity.load_npz(pairs_paths[i])
        feats = features(load_model(model_paths[i]), data)
        metrics = {
            "D": dim,
            "seed": seed,
            **probe_metrics(model, feats, data, tau, lcgm["n_candidates"]),
        }
        log.info(
            "seed %d: R² f %.4f, R² g %.4f, cc capture g %.4f, held-out excess %.4e",
            seed,
            metrics["probe_r2_f"],
            metrics["probe_r2_g"],
            metrics["cc_capture_g"],
            metrics["heldout_excess"],
        )
        integrity.save_npz(
            output.features[i],
            {
                "f": feats["f_test"][:n_plot],
                "g": feats["g_test"][:n_plot],
                "z": data["z_test"][:n_plot],
            },
        )
        integrity.write_json(output.probes[i], metrics, indent=1, allow_nan=False)
        out.append(metrics)
    return out


def probe_runs(probe_paths, metric_paths) -> pd.DataFrame:
    """One row per (D, seed): probe metrics joined with the training run's metrics."""
    import pandas as pd

    def frame(paths, keep):
        from ..integrity import load_json

        rows = []
        for path in paths:
            rows.append({k: v for k, v in load_json(path).items() if keep(k, v)})
        return pd.DataFrame(rows)

    train_keys = ("D", "seed", "score", "final_val_loss", "train_seconds")
    runs = frame(metric_paths, lambda k, v: k in train_keys)
    probes = frame(probe_paths, lambda k, v: not isinstance(v, list))
    out = runs.merge(probes, on=["D", "seed"], how="outer", validate="one_to_one")
    if out.isna().any().any():
        raise ValueError("probe and training outputs do not cover the same (D, seed) runs")
    return out.sort_values(["D", "seed"], ignore_index=True)


def probe_table(runs: pd.DataFrame, paper: dict, k: int) -> pd.DataFrame:
    """Mean and sd over seeds per D, and the paper's R² values on the row D = K."""
    from ..numerics.stats import summarise

    out = summarise(runs, "D", PROBE_METRICS)
    out["is_K"] = out["D"] == k
    for key in ("probe_r2_f", "probe_r2_g"):
        theirs = np.nan if paper[key] is None else paper[key]  # None: not the paper's setting
        out[f"paper_{key}"] = np.where(out["is_K"] & (paper["K"] == k), theirs, np.nan)
    return out


def elbow_table(table, fraction: float, k: int, runs=None, histories=None) -> pd.DataFrame:
    """Per curve: the elbow rule's D (Experiment 3's rule, as written) and, with the per-seed
    ``runs``, the noise-aware saturation rule's (:mod:`..numerics.saturation`, 2026-12-01) and its
    verdict against {K − 1, K}, gated by convergence (``histories[D]``: the validation losses of
    each seed's run; the last-fifth drop against CLOSE_TOLERANCE × the held-out excess at D)."""
    import pandas as pd

    from ..numerics.saturation import consistent, from_runs
    from ..numerics.tiers import CLOSE_TOLERANCE
    from .convergence import cell_convergence, gate

    converged = None
    if histories:
        excess = table.set_index("D")["heldout_excess_mean"]
        cells = [cell_convergence(h, CLOSE_TOLERANCE * excess[d]) for d, h in histories.items()]
        converged = all(c["converged"] for c in cells)
    rows = []
    for curve, increasing, log_scale in ELBOW_CURVES:
        q = table[f"{curve}_mean"]
        at = elbow(table["D"], q, fraction, increasing, log_scale)
        sat = {}
        if runs is not None:
            r = from_runs(runs, curve, increasing)
            verdict = consistent(r, {k - 1, k})
            sat = {
                "saturation": r.label,
                "saturation_status": r.status,
                "saturation_verdict": verdict if converged is None else gate(verdict, converged),
                "converged": converged,
            }
        rows.append(
            {
                "curve": curve,
                "increasing": increasing,
                "scale": "log" if log_scale else "linear",
                "elbow_D": math.nan if at is None else at,
                "fraction": fraction,
                "q_min": q.min(),
                "q_max": q.max(),
                "K": k,
            }
            | sat
        )
    return pd.DataFrame(rows)


def run_assemble(
    probe_paths, metric_paths, paper_path, lcgm: dict, output, setting: dict | None = None
) -> pd.DataFrame:
    """The ``assemble_lcgm`` rule: per-run table, probe table and elbow table."""
    from ..config import load_paper_values
    from ..runtime import write_csv

    runs = probe_runs(probe_paths, metric_paths)
    table = probe_table(runs, load_paper_values(paper_path, setting)["lcgm"], lcgm["K"])
    from ..integrity import load_json

    histories = {}
    for path in metric_paths:
        m = load_json(path)
        histories.setdefault(m["D"], []).append([h["val_loss"] for h in m["history"]])
    elbows = elbow_table(table, lcgm["elbow_fraction"], lcgm["K"], runs, histories)
    for row in elbows.itertuples():
        log.info("elbow of %s: D = %s (K = %d)", row.curve, row.elbow_D, row.K)
    write_csv(runs, output.runs)
    write_csv(table, output.table)
    write_csv(elbows, output.elbow)
    return table
