"""Experiment W's numerics: the width a tower needs to reach an excess ε, read off a measured
curve of excess against hidden width, and the growth of that width with 1/ε.

* :func:`width_to_reach` inverts a curve (Experiment W reads the approximation part: the excess
  minus the world's floor) by log-log interpolation between the two grid widths
  that bracket ε (exact for a power law e(w) = c·w^(−a)); "reached at the smallest width" and
  "not reached" are said as such, never extrapolated, and a level the curve crosses but loses
  again at a wider width (a curve that rises where estimation error takes over) is "lost": it
  is shown, never fitted.
* :func:`growth_fit` fits log w against log(1/ε) (power: w ∝ ε^(−q), Table 2's target tower) and
  against log log(1/ε) (polylog: w ∝ log^p(1/ε), Table 2's anchor tower on the LCGM), seed by
  seed on the levels every seed reaches inside the grid: the exponent is the seeds' mean, with
  their Student-t interval.
* :func:`shape_test` is the sample-size study's shape test (its pool axis,
  :func:`crl_approx.analyses.sample_size_fits.pool_rows`) on both axes: under a law of that shape
  the local slopes between neighbouring ε are constant, so the shape is rejected when the
  Student-t interval over seeds of (first − last local slope) lies outside ± the verdict tiers'
  relative tolerance times the mean local slope. The data decide between the shapes only when
  exactly one is rejected.
"""

from __future__ import annotations

import math

import numpy as np

from . import powerlaw
from .tiers import CLOSE_TOLERANCE

REACHED = "reached"
AT_MIN = "reached at the smallest width"
NOT_REACHED = "not reached"
LOST = "reached, lost at a wider width"
#: a level below the world's reading limit (its floor): not read, never fitted
BELOW = "below the floor: not read"
#: the statuses of a level a tower reaches and keeps (``LOST`` and ``NOT_REACHED`` are not)
KEPT = (REACHED, AT_MIN)
#: x transforms of the two growth laws: w against x(ε) is a straight line in log-log
AXES = {"power": lambda eps: 1.0 / eps, "polylog": lambda eps: np.log(1.0 / eps)}


def width_to_reach(widths, excess, eps: float, linear_last: bool = False) -> tuple[float, str]:
    """(width, status) at which the curve first reaches ``eps``: log-log interpolation between the
    last grid width above ε and the first at or below it (linear in e where that excess is
    not positive: a held-out excess can dip below 0 by sampling). (w_min, :data:`AT_MIN`) when the
    smallest width already reaches ε (the width needed is at most w_min); (inf,
    :data:`NOT_REACHED`) when no width of the grid does; status :data:`LOST` when a wider width
    is above ε again (the first crossing is returned, but the level is not a stable reading).
    ``linear_last``: the last grid width is a floor's own cell (its mean value 0 by construction,
    its seeds' values noise about 0), so a crossing on the last segment is linear in e there,
    whatever the rounding of that 0 (log-log towards a value near 0 would read any width)."""
    w = np.asarray(widths, float)
    e = np.asarray(excess, float)
    order = np.argsort(w)
    w, e = w[order], e[order]
    hit = np.flatnonzero(e <= eps)
    if hit.size == 0:
        return math.inf, NOT_REACHED
    i = int(hit[0])
    lost = bool(np.any(e[i + 1 :] > eps))  # crossed, then above ε again at a wider width
    if i == 0:
        return float(w[0]), LOST if lost else AT_MIN
    lw0, lw1 = math.log(w[i - 1]), math.log(w[i])
    if e[i] > 0 and not (linear_last and i == len(w) - 1):
        t = (math.log(eps) - math.log(e[i - 1])) / (math.log(e[i]) - math.log(e[i - 1]))
    else:
        t = (eps - e[i - 1]) / (e[i] - e[i - 1])
    return float(math.exp(lw0 + t * (lw1 - lw0))), LOST if lost else REACHED


def ladder(widths, per_seed, eps_levels, limit: float = 0.0, linear_last=False) -> list[dict]:
    """Per ε of the ladder: the width read off the seed means (``per_seed[i]``: the seeds'
    values at ``widths[i]``, rows aligned by seed), its status, and the seeds' spread: the range
    of the per-seed inversions (inf where a seed does not reach ε). A level below ``limit`` (the
    world's floor) is not read: status :data:`BELOW`, width NaN. ``linear_last``: see
    :func:`width_to_reach`."""
    vals = np.asarray([np.asarray(v, float) for v in per_seed])  # (widths, seeds)
    mean = vals.mean(axis=1)
    rows = []
    for eps in eps_levels:
        if eps < limit:
            each = [(math.nan, BELOW)] * vals.shape[1]
            width, status = math.nan, BELOW
        else:
            width, status = width_to_reach(widths, mean, eps, linear_last)
            each = [
                width_to_reach(widths, vals[:, s], eps, linear_last) for s in range(vals.shape[1])
            ]
        ws = [w for w, _ in each]
        rows.append(
            {
                "eps": float(eps),
                "width": width,
                "status": status,
                "seed_lo": float(min(ws)),
                "seed_hi": float(max(ws)),
                "seeds_reaching": sum(st in KEPT for _, st in each),
                "seeds_at_min": sum(st == AT_MIN for _, st in each),
                "seed_widths": ws,
                "seed_status": [st for _, st in each],
            }
        )
    return rows


def _seed_points(rows, seed: int, common) -> tuple[np.ndarray, np.ndarray]:
    """(ε, width) of seed ``seed``'s own crossings at the ``common`` levels (every seed reaches
    them by interpolation: :func:`common_levels`)."""
    levels = set(common)
    eps = [r["eps"] for r in rows if r["eps"] in levels]
    w = [r["seed_widths"][seed] for r in rows if r["eps"] in levels]
    return np.asarray(eps, float), np.asarray(w, float)


def common_levels(rows) -> np.ndarray:
    """The ε levels every seed reaches by interpolation inside the grid (status reached: not at
    the smallest width, not lost): the levels a per-seed growth fit may use."""
    if not rows:
        return np.asarray([], float)
    n = len(rows[0]["seed_widths"])
    return np.asarray(
        [r["eps"] for r in rows if all(st == REACHED for st in r["seed_status"][:n])], float
    )


def segments(rows, widths) -> int:
    """How many distinct log-log segments of the grid (pairs of neighbouring widths) the common
    levels' seed-mean widths fall in: a growth exponent from levels on one segment is that
    segment's slope, a power law by construction."""
    common = set(common_levels(rows))
    w = np.sort(np.asarray(widths, float))
    at = [r["width"] for r in rows if r["eps"] in common and r["status"] == REACHED]
    return len({int(np.searchsorted(w, x)) for x in at})


def growth_fit(rows, law: str, level: float) -> dict:
    """The exponent of width(ε) on one law's axis (``power``: w ∝ (1/ε)^q; ``polylog``: w ∝
    log^p(1/ε)): fitted seed by seed on the levels every seed reaches (:func:`common_levels`),
    the seeds' mean with their Student-t interval; NaN below two common levels."""
    common = common_levels(rows)
    n_seeds = len(rows[0]["seed_widths"]) if rows else 0
    per = []
    for s in range(n_seeds):
        e_s, w_s = _seed_points(rows, s, common)
        fit = powerlaw.power_fit(AXES[law](e_s), w_s) if e_s.size >= 2 else None
        per.append(-fit["a"] if fit else math.nan)
    ok = [q for q in per if math.isfinite(q)]
    exponent = float(np.mean(ok)) if ok else math.nan
    lo, hi = powerlaw.t_interval(exponent, ok, level) if ok else (math.nan, math.nan)
    return {"exponent": exponent, "lo": lo, "hi": hi, "n_levels": int(common.size), "per_seed": per}


def _local(eps, w, law) -> list[float]:
    """Local slopes of log w against log x(ε) between neighbouring reached ε."""
    order = np.argsort(-np.asarray(eps))  # ε falling: x rising
    x = AXES[law](np.asarray(eps, float)[order])
    return [-a for a in powerlaw.local_exponents(x, np.asarray(w, float)[order])]


def shape_rejected(rows, law: str, level: float) -> tuple[str, str]:
    """("rejected" | "not rejected" | "untested", the reason) for one law, on the levels every
    seed reaches (:func:`common_levels`, the growth fit's): the seeds' mean of (first − last local
    slope) and its Student-t interval against ± CLOSE_TOLERANCE × the mean local slope; untested
    below three common levels or two seeds."""
    common = common_levels(rows)
    if common.size < 3:
        return (
            "untested",
            f"{common.size} ε reached inside the grid by every seed (a shape needs 3)",
        )
    diffs, slopes = [], []
    for s in range(len(rows[0]["seed_widths"])):
        ls = _local(*_seed_points(rows, s, common), law)
        diffs.append(ls[0] - ls[-1])
        slopes.append(float(np.mean(ls)))
    if len(diffs) < 2:
        return "untested", "fewer than two seeds (a shape needs an interval)"
    diff = float(np.mean(diffs))
    lo, hi = powerlaw.t_interval(diff, diffs, level)
    band = CLOSE_TOLERANCE * abs(float(np.mean(slopes)))
    text = f"first − last local slope {diff:.3g} [{lo:.3g}, {hi:.3g}], band ±{band:.3g}"
    return ("rejected" if lo > band or hi < -band else "not rejected"), text


def shape_test(rows, level: float, n_widths: int = 3) -> dict:
    """Which law describes width(ε): "power", "polylog", or "unresolved: …". A grid of fewer
    than three widths leaves it untested: every ε read between two widths lies on one log-log
    segment, which is a power law by construction."""
    power, p_text = shape_rejected(rows, "power", level)
    poly, q_text = shape_rejected(rows, "polylog", level)
    if n_widths < 3:
        power = poly = "untested"
        p_text = q_text = f"{n_widths} widths: one log-log segment (a shape needs 3 widths)"
    if n_widths < 3:
        verdict = "unresolved: fewer than three widths"
    elif "untested" in (power, poly):
        verdict = "unresolved: too few ε reached inside the grid"
    elif power == "not rejected" and poly == "rejected":
        verdict = "power"
    elif poly == "not rejected" and power == "rejected":
        verdict = "polylog"
    elif power == poly == "rejected":
        verdict = "unresolved: neither shape fits"
    else:
        verdict = "unresolved: both shapes fit"
    return {
        "shape": verdict,
        "power_shape": power,
        "power_shape_test": p_text,
        "polylog_shape": poly,
        "polylog_shape_test": q_text,
    }
