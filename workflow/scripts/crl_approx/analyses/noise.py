"""Experiment 4: the density-ratio Tsybakov noise exponent μ in P(|r(x, y) − r(x, y')| ≤ t) ≤ c·t^μ.

Monte Carlo (:mod:`.noise_mc`, rule estimate_noise_exponent): draw (x, y, y') by the
configured scheme, compute Δ = r(x, y) − r(x, y') exactly (r is known in closed form), and count
#{|Δ| ≤ t} on a log-spaced t grid. Everything below reads only those counts (rule
assemble_noise): the empirical probability P̂(t) = #{|Δ| ≤ t}/n. μ̂ is the least-squares slope of
log P̂ on log t over the grid points inside the configured window; its confidence interval is a
multinomial bootstrap of the bin counts (equivalent to resampling the n draws, since the fit reads
only the counts at the grid points). The local slope at t is the same fit over
± ``local_halfwidth`` decades around t.

Small-t asymptotics (binary mixture, marginal scheme; derivation in docs/noise_exponent.md): with
A = √(π(1−π))·g(llr_x(x)) and b(y) likewise, r(x, y) = 1 + A(x)·b(y), so Δ = A·B with
B = b(y) − b(y') independent of A, and both with densities at 0. Then

    P(|Δ| ≤ t) = c·t·(log(1/t) + C₀) + o(t),   c = α·β,   C₀ = 1 + C_A + C_B,

α, β the densities of |A|, |B| at 0 and C_A = lim_{s→0} E[1/|A|; |A| ≥ s]/α − log(1/s) (C_B the
same for B). The log-log slope is therefore 1 − 1/(log(1/t) + C₀): the exponent is 1 up to a log
factor, and a fitted μ̂ < 1 is a property of the window. :func:`gmm_asymptotics` computes α, β,
C_A, C_B by quadrature.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from ..models.gmm import GaussianMixture
from ..models.rng import stream
from ..numerics.asymptotics import (
    asymptotic_probability,
    asymptotic_slope,
    gmm_asymptotics,
)

log = logging.getLogger(__name__)

#: stream keys of a seed for the Monte Carlo and its bootstrap
STREAM_MC, STREAM_BOOT = 11, 12


# --- estimation -----------------------------------------------------------------------------------
def t_grid(t_min: float, t_max: float, per_decade: int) -> np.ndarray:
    """Log-spaced grid with ``per_decade`` points per decade that contains both ends exactly when
    they are on the lattice 10^(k/per_decade)."""
    lo, hi = math.log10(t_min), math.log10(t_max)
    k = np.arange(math.floor(lo * per_decade + 1e-9), math.ceil(hi * per_decade - 1e-9) + 1)
    return 10.0 ** (k / per_decade)


def ols_slope(logt: np.ndarray, logp: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept (NaN with fewer than two points)."""
    if logt.size < 2:
        return math.nan, math.nan
    slope, intercept = np.polyfit(logt, logp, 1)
    return float(slope), float(intercept)


def _fit_rows(logt, logp, mask):
    """Slopes of each row of logp (bootstrap replicates) over the columns in mask."""
    x = logt[mask]
    y = logp[:, mask]
    xc = x - x.mean()
    return (y - y.mean(1, keepdims=True)) @ xc / (xc @ xc)


def local_slopes(logt: np.ndarray, logp: np.ndarray, halfwidth: float) -> np.ndarray:
    """Slope at each grid point over the points within ``halfwidth`` decades (rows: replicates).
    NaN where the window has fewer than 3 finite points."""
    logp = np.atleast_2d(logp)
    finite = np.isfinite(logp)
    filled = np.where(finite, logp, 0.0)  # the fits below only read finite columns
    out = np.full(logp.shape, np.nan)
    for i, lt in enumerate(logt):
        mask = np.abs(logt - lt) <= halfwidth * math.log(10) + 1e-12
        mask &= finite.all(axis=0)
        if mask.sum() >= 3:
            out[:, i] = _fit_rows(logt, filled, mask)
    return out


def grid_counts(abs_delta: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """#{|Δ| ≤ t} at every grid point."""
    return np.searchsorted(np.sort(abs_delta), grid, side="right")


def estimate(abs_delta: np.ndarray, grid: np.ndarray, *args, **kwargs):
    """:func:`estimate_from_counts` on a sample of |Δ|."""
    return estimate_from_counts(grid_counts(abs_delta, grid), abs_delta.size, grid, *args, **kwargs)


def _column_quantile(a: np.ndarray, q: float) -> np.ndarray:
    """Quantile of each column over its finite entries (NaN for a column with none)."""
    out = np.full(a.shape[1], np.nan)
    finite = np.isfinite(a).any(0)
    if finite.any():
        out[finite] = np.nanquantile(a[:, finite], q, axis=0)
    return out


def estimate_from_counts(
    counts: np.ndarray,
    n: int,
    grid: np.ndarray,
    window: tuple[float, float],
    n_boot: int,
    level: float,
    halfwidth: float,
    rng: np.random.Generator,
    min_count: int = 10,
):
    """Fit μ on the window and compute the curve with bootstrap bands, from the counts
    #{|Δ| ≤ t} of n draws at the grid points (counts of several seeds add up: pooling).

    Returns (summary dict, curve DataFrame). Grid points with fewer than ``min_count`` draws below
    them are reported but excluded from every fit (too few events to estimate a probability).
    """
    counts = np.asarray(counts, dtype=np.int64)
    cells = np.diff(np.concatenate([[0], counts, [n]]))
    boot = rng.multinomial(n, cells / n, size=n_boot)
    boot_counts = np.cumsum(boot, axis=1)[:, :-1]
    with np.errstate(divide="ignore"):
        logp = np.log(counts / n)
        logp_boot = np.log(boot_counts / n)
    logt = np.log(grid)
    ok = counts >= min_count
    in_window = (grid >= window[0] * (1 - 1e-9)) & (grid <= window[1] * (1 + 1e-9))
    mask = in_window & ok
    if mask.sum() < 2:
        raise ValueError(
            f"fewer than two grid points with >= {min_count} draws inside the window "
            f"[{window[0]:g}, {window[1]:g}]: widen the window or draw more samples"
        )
    mu, intercept = ols_slope(logt[mask], logp[mask])
    mu_boot = _fit_rows(logt, np.where(np.isfinite(logp_boot), logp_boot, 0.0), mask)
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    lo, hi = np.quantile(mu_boot, [lo_q, hi_q])
    logp_fit = np.where(ok, logp, np.nan)
    slope = local_slopes(logt, logp_fit, halfwidth)[0]
    slope_boot = local_slopes(logt, np.where(ok, logp_boot, np.nan), halfwidth)
    p_boot = boot_counts / n
    curve = pd.DataFrame(
        {
            "t": grid,
            "count": counts,
            "probability": counts / n,
            "probability_lo": np.quantile(p_boot, lo_q, axis=0),
            "probability_hi": np.quantile(p_boot, hi_q, axis=0),
            "reliable": ok,
            "in_window": in_window,
            "local_slope": slope,
            "local_slope_lo": _column_quantile(slope_boot, lo_q),
            "local_slope_hi": _column_quantile(slope_boot, hi_q),
        }
    )
    summary = {
        "n_samples": int(n),
        "window_lo": float(window[0]),
        "window_hi": float(window[1]),
        "window_points": int(mask.sum()),
        "mu_hat": mu,
        "mu_ci_lo": float(lo),
        "mu_ci_hi": float(hi),
        "ci_level": level,
        "n_bootstrap": int(n_boot),
        "log_c_hat": intercept,
        "rate_exponent": (mu + 1) / (mu + 2),
        "rate_exponent_ci_lo": (lo + 1) / (lo + 2),
        "rate_exponent_ci_hi": (hi + 1) / (hi + 2),
    }
    return summary, curve


def asymptotic_window_slope(window, c0: float, per_decade: int) -> float:
    """The least-squares slope the asymptotic curve itself has on the window's grid points."""
    t = t_grid(window[0], window[1], per_decade)
    t = t[(t >= window[0] * (1 - 1e-9)) & (t <= window[1] * (1 + 1e-9))]
    return ols_slope(np.log(t), np.log(asymptotic_probability(t, 1.0, c0)))[0]


# --- rules --------------------------------------------------------------------------------------
def estimate_args(noise: dict) -> dict:
    return {
        "window": tuple(noise["window"]),
        "n_boot": noise["n_bootstrap"],
        "level": noise["ci_level"],
        "halfwidth": noise["local_halfwidth"],
        "min_count": noise["min_count"],
    }


def seed_fit(record: dict, noise: dict):
    """The fit of one seed's Monte Carlo counts (bootstrap stream of that seed): its summary row
    (the reported curve is the pooled one)."""
    summary, _ = estimate_from_counts(
        np.asarray(record["count"]),
        record["n_samples"],
        np.asarray(record["t"]),
        rng=stream(record["seed"], STREAM_BOOT),
        **estimate_args(noise),
    )
    return {k: record[k] for k in ("dataset", "seed", "scheme")} | summary


def pooled(records: list[dict], noise: dict):
    """The fit on the counts of all seeds added up (one Monte Carlo of Σ n draws)."""
    grids = {tuple(r["t"]) for r in records}
    if len(grids) != 1:
        raise ValueError("the seeds' Monte Carlo counts are on different t grids")
    counts = sum(np.asarray(r["count"], dtype=np.int64) for r in records)
    seed = min(r["seed"] for r in records)
    return estimate_from_counts(
        counts,
        sum(r["n_samples"] for r in records),
        np.asarray(records[0]["t"]),
        rng=stream(seed, STREAM_BOOT + 100),
        **estimate_args(noise),
    )


def run_assemble(count_paths, datasets, gmm: dict, noise: dict, paper_path, output):
    """The ``assemble_noise`` rule: from the Monte Carlo counts, per-seed and pooled fits per
    dataset (window, bootstrap, local slopes), the pooled curves, and for the mixture the small-t
    asymptotics beside the Monte Carlo."""
    from ..config import load_paper_values
    from ..runtime import write_csv

    paper = load_paper_values(paper_path, {"gmm": gmm})["noise"]
    records = []
    from ..integrity import load_json

    for path in count_paths:
        records.append(load_json(path))
    rows, curve_tables = [], []
    for dataset in datasets:
        mine = sorted((r for r in records if r["dataset"] == dataset), key=lambda r: r["seed"])
        summary, curve = pooled(mine, noise)
        fits = [seed_fit(r, noise) for r in mine]
        for f in fits:
            log.info("%s seed %d: mu_hat %.4f", dataset, f["seed"], f["mu_hat"])
            rows.append({**f, "sample": f"seed {f['seed']}"})
        mu = [f["mu_hat"] for f in fits]
        pooled_row = {
            "dataset": dataset,
            "seed": -1,
            "sample": f"pooled over {len(mine)} seed(s)",
            "scheme": noise["scheme"],
            **summary,
            "mu_hat_seed_sd": float(np.std(mu, ddof=1)) if len(mu) > 1 else math.nan,
        }
        curve.insert(0, "dataset", dataset)
        if dataset == "gmm":
            asym = gmm_asymptotics(GaussianMixture.from_config(gmm))
            pooled_row.update({f"asymptotic_{k}": v for k, v in asym.items()})
            pooled_row["asymptotic_window_slope"] = asymptotic_window_slope(
                noise["window"], asym["C0"], noise["points_per_decade"]
            )
            t = curve["t"].to_numpy()
            curve["asymptotic_probability"] = asymptotic_probability(t, asym["c"], asym["C0"])
            curve["asymptotic_slope"] = asymptotic_slope(t, asym["C0"])
            in_win = curve["in_window"] & curve["reliable"]
            ratio = curve.loc[in_win, "probability"] / curve.loc[in_win, "asymptotic_probability"]
            pooled_row["asymptotic_max_rel_dev_in_window"] = float(np.max(np.abs(ratio - 1)))
            pooled_row["paper_mu_hat"] = paper["mu_hat"]
            pooled_row["paper_rate_exponent"] = paper["rate_exponent"]
        rows.append(pooled_row)
        curve_tables.append(curve)
        log.info(
            "%s pooled: mu_hat %.4f [%.4f, %.4f], rate exponent %.4f",
            dataset,
            summary["mu_hat"],
            summary["mu_ci_lo"],
            summary["mu_ci_hi"],
            summary["rate_exponent"],
        )
    table = pd.DataFrame(rows)
    write_csv(table, output.table)
    write_csv(pd.concat(curve_tables, ignore_index=True), output.curve)
    return table
