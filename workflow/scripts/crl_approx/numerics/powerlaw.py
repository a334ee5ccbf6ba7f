"""Power laws y = c·x^(−a) fitted in log-log: the fit with its residuals, local exponents between
neighbouring points, Student-t intervals over independent seeds and the x at which a law (plus an
asymptote) enters a band."""

from __future__ import annotations

import math

import numpy as np

from .tiers import seed_half_width


def power_fit(x, y) -> dict:
    """Least squares of log y on log x over the points with y > 0: exponent ``a``, ``log_c``,
    ``n_points`` used, ``dof`` (points − 2) and ``rms_log_residual`` (NaN without a residual
    degree of freedom: two points fit any power law exactly, so the law itself is untested)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    out = {"a": math.nan, "log_c": math.nan, "n_points": int(ok.sum()), "dof": 0}
    out["rms_log_residual"] = math.nan
    if ok.sum() < 2 or len(np.unique(x[ok])) < 2:
        return out
    lx, ly = np.log(x[ok]), np.log(y[ok])
    slope, intercept = np.polyfit(lx, ly, 1)
    out |= {"a": float(-slope), "log_c": float(intercept), "dof": int(ok.sum() - 2)}
    if out["dof"] > 0:
        resid = ly - (intercept + slope * lx)
        out["rms_log_residual"] = float(np.sqrt(np.sum(resid**2) / out["dof"]))
    return out


def local_exponents(x, y) -> list[float]:
    """−Δlog y / Δlog x between neighbouring points (sorted by x); NaN where a y is not > 0."""
    order = np.argsort(np.asarray(x, float))
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    out = []
    for i in range(len(x) - 1):
        if y[i] > 0 and y[i + 1] > 0:
            out.append(float(-np.log(y[i + 1] / y[i]) / np.log(x[i + 1] / x[i])))
        else:
            out.append(math.nan)
    return out


def t_interval(estimate: float, per_seed, level: float) -> tuple[float, float]:
    """estimate ± t·sd/√k from the k finite per-seed estimates (Student's t, k − 1 degrees of
    freedom: seeds are independent runs, and there are few). NaN with fewer than two."""
    v = np.asarray(per_seed, float)
    v = v[np.isfinite(v)]
    if len(v) < 2 or not math.isfinite(estimate):
        return math.nan, math.nan
    half = seed_half_width(v.std(ddof=1), len(v), level)
    return estimate - half, estimate + half


def x_to_reach(a: float, log_c: float, target: float, offset: float = 0.0) -> float:
    """x at which offset + c·x^(−a) = target; inf when never (a <= 0, or target <= offset: the
    asymptote itself lies at or above the target)."""
    gap = target - offset
    if not (math.isfinite(a) and math.isfinite(log_c)) or a <= 0 or gap <= 0:
        return math.inf
    return float(math.exp((log_c - math.log(gap)) / a))
