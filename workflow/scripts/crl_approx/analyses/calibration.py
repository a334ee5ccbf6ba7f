"""Measured calibration: retrieval excess against contrastive excess, by quadrature.

Retrieval error of a score s (a pairwise ranking, AUC-type error): for a query x ~ P_X, a positive
y ~ p(·|x) and a negative y' ~ P_Y, the probability that s ranks them wrongly, ties counting half:

    E(s) = E_x Σ_{y, y'} p(y|x) p(y') [1{s(x, y') > s(x, y)} + ½·1{s(x, y') = s(x, y)}].

For each x this is one minus the AUC of s(x, ·) between p(·|x) and P_Y, minimised by any
increasing function of the likelihood ratio p(y|x)/p(y) = r(x, y) (Neyman–Pearson): E* = E(PMI).
On the evaluation quadrature p(y|x) dy = r(x, y) w_y and P_Y = w_y, so E(s) is an exact finite
sum, computed per x by sorting s(x, ·) (O(n log n)).

The paper's calibration inequality: E(s) − E* ≲ (L(s) − L*)^κ with κ = 1/2 distribution-free and
κ = (μ+1)/(μ+2) under the noise condition (upper bounds: a measured exponent may be larger). We
fit κ̂ as the slope of log(E(s) − E*) on log(L(s) − L*) over many scores: every epoch checkpoint of
every training run and the rank-D spectral truncations, with a bootstrap interval that resamples
training runs (a run's checkpoints together) and truncations, not single checkpoints.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..models.gmm import GaussianMixture
from ..models.rng import stream
from ..numerics.spectrum import OperatorSpectrum, infonce_loss, operator_spectrum

log = logging.getLogger(__name__)

STREAM_BOOT = 21


def retrieval_error(spec: OperatorSpectrum, score: np.ndarray) -> float:
    """E(s) on the quadrature (see the module doc); ``score`` is the n_x × n_y score matrix."""
    q = spec.quad
    ratio = np.exp(spec.pmi)
    total = 0.0
    for i in range(score.shape[0]):
        s = score[i]
        order = np.argsort(s, kind="stable")
        ss = s[order]
        cum = np.concatenate([[0.0], np.cumsum(q.wy[order])])
        le = cum[np.searchsorted(ss, s, side="right")]  # P_Y(s' <= s)
        lt = cum[np.searchsorted(ss, s, side="left")]  # P_Y(s' < s)
        wrong = (cum[-1] - le) + 0.5 * (le - lt)
        total += q.wx[i] * float((q.wy * ratio[i]) @ wrong)
    return total


def excess_pair(spec: OperatorSpectrum, score, tau: float, l_star: float, e_star: float):
    """(contrastive excess L(s) − L*, retrieval excess E(s) − E*) of one score."""
    return infonce_loss(spec, score, tau) - l_star, retrieval_error(spec, score) - e_star


def fit_exponent(contrastive, retrieval, n_boot: int, level: float, rng, clusters=None) -> dict:
    """Least-squares slope of log retrieval excess on log contrastive excess, with a percentile
    bootstrap interval that resamples ``clusters`` (one label per point) with replacement, all of
    a drawn cluster's points together: the epoch checkpoints of one training run are one cluster
    (they are strongly correlated), each truncation its own. Without labels, every point is its
    own cluster."""
    x, y = np.log(np.asarray(contrastive)), np.log(np.asarray(retrieval))
    n = x.size
    if n < 3:
        raise ValueError(f"{n} usable scores: too few to fit a calibration exponent")
    slope, intercept = np.polyfit(x, y, 1)
    labels = np.arange(n) if clusters is None else pd.factorize(np.asarray(clusters))[0]
    k = labels.max() + 1
    draws = rng.integers(0, k, size=(n_boot, k))
    counts = np.zeros((n_boot, k))
    np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1.0)
    w = counts[:, labels]  # each point weighted by how often its cluster was drawn
    wsum = w.sum(1, keepdims=True)
    xc = x - (w * x).sum(1, keepdims=True) / wsum
    yc = y - (w * y).sum(1, keepdims=True) / wsum
    denom = (w * xc * xc).sum(1)
    ok = denom > 1e-12 * np.abs(x).max() ** 2
    boot = (w * xc * yc).sum(1)[ok] / denom[ok]
    lo, hi = np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2])
    return {
        "n_points": int(n),
        "n_clusters": int(k),
        "exponent": float(slope),
        "exponent_ci_lo": float(lo),
        "exponent_ci_hi": float(hi),
        "intercept": float(intercept),
    }


def checkpoint_points(spec, tau, l_star, e_star, metrics_path, ckpt_path) -> list[dict]:
    """One point per epoch checkpoint of one training run."""
    from ..integrity import load_json, load_npz, same_job

    run, rec = load_json(metrics_path, with_record=True)
    ck, ck_rec = load_npz(ckpt_path, with_record=True)
    same_job([(metrics_path, rec), (ckpt_path, ck_rec)])
    if not (
        np.array_equal(ck["x_nodes"], spec.quad.x) and np.array_equal(ck["y_nodes"], spec.quad.y)
    ):
        raise ValueError(f"{ckpt_path} was saved on another quadrature than gmm.quadrature_nodes")
    points = []
    for epoch, f, g in zip(ck["epoch"], ck["f"], ck["g"], strict=True):
        c, r = excess_pair(spec, f @ g.T, tau, l_star, e_star)
        points.append(
            {
                "source": "checkpoint",
                "objective": run["objective"],
                "score": run.get("score", "inner"),
                "D": run["D"],
                "seed": run["seed"],
                "epoch": int(epoch),
                "contrastive_excess": c,
                "retrieval_excess": r,
            }
        )
    return points


def truncation_points(spec, tau, l_star, e_star, max_rank: int) -> list[dict]:
    """One point per rank-D spectral truncation τ·PMI_D, D = 1..max_rank."""
    points = []
    for d in range(1, max_rank + 1):
        c, r = excess_pair(spec, tau * spec.truncated_pmi(d), tau, l_star, e_star)
        points.append(
            {
                "source": "truncation",
                "objective": "",
                "score": "inner",
                "D": d,
                "seed": -1,
                "epoch": 0,
                "contrastive_excess": c,
                "retrieval_excess": r,
            }
        )
    return points


#: the groups of points fitted: name → selector of the points' rows
GROUPS = {
    "all": lambda p: np.ones(len(p), bool),
    "checkpoints": lambda p: (p["source"] == "checkpoint").to_numpy(),
    "checkpoints_inner": lambda p: (
        (p["source"] == "checkpoint") & (p["score"] == "inner")
    ).to_numpy(),
    "checkpoints_cosine": lambda p: (
        (p["source"] == "checkpoint") & (p["score"] == "cosine")
    ).to_numpy(),
    "truncations": lambda p: (p["source"] == "truncation").to_numpy(),
}


def groups(points: pd.DataFrame) -> dict:
    """The named groups above, plus the checkpoints of each D (both scores)."""
    out = dict(GROUPS)
    for d in sorted(points.loc[points["source"] == "checkpoint", "D"].unique()):
        out[f"checkpoints_D{d}"] = lambda p, d=d: (
            (p["source"] == "checkpoint") & (p["D"] == d)
        ).to_numpy()
    return out


def run_labels(points: pd.DataFrame) -> pd.Series:
    """One label per training run (its checkpoints share it) and per truncation."""
    cols = ["source", "objective", "score", "D", "seed"]
    return points[cols].astype(str).agg("|".join, axis=1)


def calibration_table(points: pd.DataFrame, cal: dict, mu_hat: float | None, seed: int):
    """One fit per group of scores. ``max_ratio_to_bound``: the largest (E − E*)/(L − L*)^{1/2},
    the constant with which the distribution-free bound holds on these scores;
    ``max_ratio_to_noise_bound`` the same with the exponent (μ̂+1)/(μ̂+2)."""
    usable = (points["contrastive_excess"] > cal["min_excess"]) & (
        points["retrieval_excess"] > cal["min_excess"]
    )
    noise_rate = math.nan if mu_hat is None else (mu_hat + 1) / (mu_hat + 2)
    rows = []
    for name, select in groups(points).items():
        sub = points[select(points) & usable.to_numpy()]
        if len(sub) < 3:
            continue
        fit = fit_exponent(
            sub["contrastive_excess"],
            sub["retrieval_excess"],
            cal["n_bootstrap"],
            cal["ci_level"],
            stream(seed, STREAM_BOOT),
            clusters=run_labels(sub),
        )
        rows.append(
            {
                "group": name,
                **fit,
                "n_excluded": int((select(points) & ~usable.to_numpy()).sum()),
                "distribution_free": 0.5,
                "noise_rate": noise_rate,
                "mu_hat": math.nan if mu_hat is None else mu_hat,
                "max_ratio_to_bound": float(
                    (sub["retrieval_excess"] / sub["contrastive_excess"] ** 0.5).max()
                ),
                "max_ratio_to_noise_bound": float(
                    (sub["retrieval_excess"] / sub["contrastive_excess"] ** noise_rate).max()
                )
                if mu_hat is not None
                else math.nan,
            }
        )
    return pd.DataFrame(rows)


def run(
    gmm: dict, tau: float, calibration: dict, metric_paths, ckpt_paths, noise_table, seed, output
):
    """The ``measure_calibration`` rule."""
    from ..runtime import write_csv

    spec = operator_spectrum(GaussianMixture.from_config(gmm), gmm["quadrature_nodes"])
    l_star = infonce_loss(spec, tau * spec.pmi, tau)
    e_star = retrieval_error(spec, spec.pmi)
    log.info("L* = %.10f, E* (Bayes retrieval error) = %.10f", l_star, e_star)
    points = truncation_points(spec, tau, l_star, e_star, calibration["truncation_max_rank"])
    ckpts = {Path(p).parent: p for p in ckpt_paths}  # pair each run's files by their folder
    for metrics_path in metric_paths:
        ckpt_path = ckpts[Path(metrics_path).parent]
        points += checkpoint_points(spec, tau, l_star, e_star, metrics_path, ckpt_path)
    points = pd.DataFrame(points)
    points["E_star"] = e_star
    points["L_star"] = l_star
    noise = pd.read_csv(noise_table)
    pooled = noise[(noise["dataset"] == "gmm") & (noise["seed"] == -1)]
    mu_hat = float(pooled["mu_hat"].iloc[0]) if len(pooled) else None
    table = calibration_table(points, calibration, mu_hat, seed)
    for row in table.itertuples():
        log.info(
            "%s: exponent %.3f [%.3f, %.3f] over %d scores",
            row.group,
            row.exponent,
            row.exponent_ci_lo,
            row.exponent_ci_hi,
            row.n_points,
        )
    write_csv(points, output.points)
    write_csv(table, output.table)
    return table
