"""Experiment 4: the density-ratio Tsybakov noise exponent μ in P(|r(x, y) − r(x, y')| ≤ t) ≤ c·t^μ.

Monte Carlo (:mod:`crl_approx.noise_mc`, rule estimate_noise_exponent): draw (x, y, y') by the
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

import itertools
import json
import logging
import math
import warnings

import numpy as np
import pandas as pd
from scipy import integrate
from scipy.stats import norm

from .gmm import GaussianMixture
from .rng import stream

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


# --- small-t asymptotics of the binary mixture ----------------------------------------------------
def _weight(mix: GaussianMixture) -> float:
    return math.sqrt(mix.prior * (1 - mix.prior))


def _density_x(mix: GaussianMixture, x):
    return mix.prior * norm.pdf(x, mix.mu_x, mix.sigma_x) + (1 - mix.prior) * norm.pdf(
        x, -mix.mu_x, mix.sigma_x
    )


def _h(mix: GaussianMixture, a):
    """√(π(1−π))·g(a): the factor of r = 1 + A·b as a function of the log likelihood ratio."""
    return _weight(mix) * mix._g(np.asarray(a, float))


def _h_prime(mix: GaussianMixture, a):
    """d/da of √(π(1−π))·g(a), g(a) = (e^a − 1)/(π e^a + 1 − π): g' = e^a/(π e^a + 1 − π)²."""
    pi = mix.prior
    a = np.asarray(a, float)
    e = np.exp(-np.abs(a))
    # e^a/(π e^a + 1 − π)² written without overflow for either sign of a
    val = np.where(a > 0, e / (pi + (1 - pi) * e) ** 2, e / (pi * e + 1 - pi) ** 2)
    return _weight(mix) * val


def _side_constant(f_v, h_of_v, h_prime_v, f0: float, upper: float) -> float:
    """∫_0^upper (f(v) − f0·h'(v))/h(v) dv for a monotone h with h(0) = 0 (one side of C_A)."""

    def integrand(v):
        return (f_v(v) - f0 * h_prime_v(v)) / h_of_v(v)

    val, _ = integrate.quad(integrand, 0.0, upper, limit=400, epsabs=1e-13, epsrel=1e-11)
    return val


def gmm_asymptotics(mix: GaussianMixture) -> dict:
    """c and C₀ of P(|Δ| ≤ t) = c·t·(log(1/t) + C₀) + o(t) for the marginal scheme.

    A = h(x) with h increasing through 0 at x = 0 (llr_x(0) = 0). One side x > 0 contributes
    R = ∫_0^{h(∞)} (f₊(u) − f_A(0))/u du + f_A(0)·log h(∞) to α·C_A, written in x as
    ∫_0^∞ (f_X(x) − f_A(0)·h'(x))/h(x) dx + f_A(0)·log h(∞); the same for x < 0 with |h|.
    For B = b(y) − b(y') (f_b the density of b(y)): β = 2 f_B(0) = 2 ∫ f_b², and
    β·C_B = ∫ f_b(v) K(v) dv with K(v) = ∫ (f_b(w) − f_b(v)·1{|v − w| < 1})/|v − w| dw, every
    integral written in y (where the integrands are smooth) and done by adaptive quadrature.
    """
    if mix.mu_x == 0 or mix.mu_y == 0:
        raise ValueError("with mu = 0, r ≡ 1 and Δ ≡ 0: there is no small-t regime")
    kx = 2 * mix.mu_x / mix.sigma_x**2  # llr_x = kx·x
    fx0 = _density_x(mix, 0.0)
    fa0 = fx0 / (_h_prime(mix, 0.0) * kx)  # density of A at 0 (either side)
    alpha = 2 * fa0
    c_a = 0.0
    for sign in (1.0, -1.0):
        h_inf = abs(float(_h(mix, sign * 1e3)))  # h(±∞), reached to rounding by a = ±1000

        def f_v(v, s=sign):
            return _density_x(mix, s * v)

        def h_v(v, s=sign):
            return np.abs(_h(mix, s * kx * v))

        def hp_v(v, s=sign):
            return _h_prime(mix, s * kx * v) * kx

        upper = 40.0 * mix.sigma_x + 2 * abs(mix.mu_x)
        c_a += _side_constant(f_v, h_v, hp_v, fa0, upper) + fa0 * math.log(h_inf)
    c_a /= alpha

    # B = b(y) − b(y'), y, y' iid from P_Y
    ky = 2 * mix.mu_y / mix.sigma_y**2
    pi = mix.prior
    b_lo, b_hi = float(_h(mix, -1e3)), float(_h(mix, 1e3))

    lo_y, hi_y = -abs(mix.mu_y) - 14 * mix.sigma_y, abs(mix.mu_y) + 14 * mix.sigma_y

    # scalar versions with the math module: the nested quadrature calls these ~10^6 times
    w = _weight(mix)
    mu, sig = mix.mu_y, mix.sigma_y
    norm_c = 1.0 / (sig * math.sqrt(2 * math.pi))

    def fy(y):
        return norm_c * (
            pi * math.exp(-0.5 * ((y - mu) / sig) ** 2)
            + (1 - pi) * math.exp(-0.5 * ((y + mu) / sig) ** 2)
        )

    def b_of(y):
        a = ky * y
        e = math.exp(-abs(a))
        if a > 0:
            return w * -math.expm1(-a) / (pi + (1 - pi) * e)
        return w * math.expm1(a) / (pi * e + 1 - pi)

    def b_prime(y):
        a = ky * y
        e = math.exp(-abs(a))
        d = (pi + (1 - pi) * e) if a > 0 else (pi * e + 1 - pi)
        return w * e / d**2 * ky

    def b_inverse(w):
        g = w / _weight(mix)
        return (math.log1p(g * (1 - pi)) - math.log1p(-g * pi)) / ky

    # where b(y) is within 1e-12 of the end of its range, double precision cannot resolve f_b:
    # stop there (the y-mass beyond is what a Monte Carlo of 10^7 draws could not see either)
    lo_y = max(lo_y, b_inverse(b_lo + 1e-12 * (b_hi - b_lo)))
    hi_y = min(hi_y, b_inverse(b_hi - 1e-12 * (b_hi - b_lo)))

    def quad(fun, lo, hi, points=()):
        pts = sorted(p for p in points if lo < p < hi)
        edges = [lo, *pts, hi]
        return sum(
            integrate.quad(fun, e0, e1, limit=200, epsabs=1e-10, epsrel=1e-8)[0]
            for e0, e1 in itertools.pairwise(edges)
        )

    def k_of(y):
        """K(v) = ∫ (f_b(w) − f_b(v)·1{|v − w| < 1})/|v − w| dw at v = b(y), written in y'."""
        v, fbv = b_of(y), fy(y) / b_prime(y)

        def inner(y2):
            d = abs(v - b_of(y2))
            if d == 0.0:
                return 0.0
            return (fy(y2) - (fbv * b_prime(y2) if d < 1.0 else 0.0)) / d

        cuts = [y] + [b_inverse(v + s) for s in (-1.0, 1.0) if b_lo < v + s < b_hi]
        val = quad(inner, lo_y, hi_y, cuts)
        # the part of the window |v − w| < 1 outside the range of b, where f_b = 0
        for gap in (v - b_lo, b_hi - v):
            if gap < 1.0:
                val += fbv * math.log(gap)
        return val

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", integrate.IntegrationWarning)
        fb0 = quad(lambda y: fy(y) ** 2 / b_prime(y), lo_y, hi_y, [0.0])  # f_B(0) = ∫ f_b²
        beta = 2 * fb0
        c_b = quad(lambda y: fy(y) * k_of(y), lo_y, hi_y, [0.0]) / beta
    if caught:
        log.warning(
            "asymptotic constants: %d quadrature warnings (%s); treat c and C0 as approximate",
            len(caught),
            str(caught[0].message).splitlines()[0],
        )
    return {
        "alpha": alpha,
        "beta": beta,
        "c": alpha * beta,
        "C_A": c_a,
        "C_B": c_b,
        "C0": 1.0 + c_a + c_b,
        "quadrature_warnings": len(caught),
    }


def asymptotic_probability(t, c: float, c0: float):
    return c * np.asarray(t) * (np.log(1 / np.asarray(t)) + c0)


def asymptotic_slope(t, c0: float):
    """d log P / d log t of c·t·(log(1/t) + C₀): 1 − 1/(log(1/t) + C₀)."""
    return 1.0 - 1.0 / (np.log(1 / np.asarray(t)) + c0)


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
    from .config import load_paper_values
    from .runtime import write_csv

    paper = load_paper_values(paper_path)["noise"]
    records = []
    for path in count_paths:
        with open(path, encoding="utf-8") as fh:
            records.append(json.load(fh))
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
