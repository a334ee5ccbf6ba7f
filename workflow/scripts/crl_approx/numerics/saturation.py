"""One noise-aware saturation rule for every D sweep (LCGM probes and excess, Experiment R's class
pairings and halves). A new rule, dated 2026-12-01 (issue 26): it replaces, for the verdicts, the
elbow of Experiment 3 (:func:`..analyses.probes.elbow`), which read only the seed-mean curve and
had no noise floor (a flat curve that drifts by noise had no elbow at all).

It reads the per-seed values. For two dimensions D < D′, the improvement of D′ over D is
q(D′) − q(D) per seed (oriented so that larger is better), and

* D′ **resolvably beats** D when the lower end of the ``level`` Student-t interval of the mean
  improvement (paired over seeds when every D has the same seeds, Welch otherwise) exceeds the
  tolerance ``tolerance``·|mean q(D)| (:data:`.tiers.CLOSE_TOLERANCE`, the verdict tiers'
  relative tolerance): better by more than the seeds resolve *plus* the tolerance;
* D′ **beats D by its mean** when the mean improvement alone exceeds that tolerance.

The saturation point D* is the smallest D of the sweep that no larger D resolvably beats. Then:

* ``saturated`` at D* (label ``"D*"``), or ``"≤ D_min"`` when D* is the sweep's first D;
* ``not saturated`` when D* is the last D (label ``"≥ D_max"``: the sweep never showed a plateau);
* ``unresolved`` when some larger D beats D* by its mean but not resolvably: the seeds cannot
  tell (label ``"unresolved (D*–D_m)"``, D_m the smallest D no larger D beats by its mean); also
  with fewer than two seeds.

A flat curve is saturated at its first D, never "none". :func:`consistent` turns a result into a
verdict against a predicted set of D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .tiers import CLOSE_TOLERANCE, SEED_LEVEL, seed_half_width

SATURATED = "saturated"
NOT_SATURATED = "not saturated"
UNRESOLVED = "unresolved"
#: the date the rule was written (a new, post hoc prediction rule; docs/experiment_r.md)
RULE_DATE = "2026-12-01"


@dataclass(frozen=True)
class Saturation:
    status: str  #: SATURATED, NOT_SATURATED or UNRESOLVED
    at: int | None  #: D* (the smallest D no larger D resolvably beats)
    lo: float  #: the range of D the data allow for the saturation point: [lo, hi]
    hi: float
    label: str
    reason: str


def _interval(a, b, level: float) -> tuple[float, float, float]:
    """(mean, lower, upper) of the level interval of mean(b − a): paired when a and b hold the
    same seeds (no NaN in either), Welch otherwise; NaN bounds with fewer than two seeds."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape == b.shape and np.isfinite(a).all() and np.isfinite(b).all():
        diff = b - a
        mean = float(diff.mean())
        half = seed_half_width(float(diff.std(ddof=1)) if diff.size > 1 else math.nan, diff.size)
        return mean, mean - half, mean + half
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    mean = float(b.mean() - a.mean())
    if a.size < 2 or b.size < 2:
        return mean, math.nan, math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if se > 0 else 1.0
    half = float(stats.t.ppf((1 + level) / 2, dof) * se)
    return mean, mean - half, mean + half


def saturation(
    dims,
    per_seed,
    increasing: bool,
    level: float = SEED_LEVEL,
    tolerance: float = CLOSE_TOLERANCE,
) -> Saturation:
    """The saturation point of a sweep: ``per_seed[i]`` the seed values at ``dims[i]`` (rows aligned
    by seed for the paired comparison); ``increasing``: whether larger values are better."""
    d = np.asarray(dims, int)
    order = np.argsort(d)
    d = d[order]
    vals = [np.asarray(per_seed[i], float) for i in order]
    if any(not np.isfinite(v).any() for v in vals):
        bad = [int(x) for x, v in zip(d, vals, strict=True) if not np.isfinite(v).any()]
        raise ValueError(f"no finite seed value at D = {bad}")
    sign = 1.0 if increasing else -1.0
    n_seeds = min(int(np.isfinite(v).sum()) for v in vals)

    def scale(i):
        return tolerance * abs(float(np.nanmean(vals[i])))

    def beats(i, j, resolvably: bool) -> bool:
        mean, lo, _ = _interval(sign * vals[i], sign * vals[j], level)
        return (lo if resolvably else mean) > scale(i)

    def first_unbeaten(resolvably: bool) -> int:
        for i in range(len(d)):
            if not any(beats(i, j, resolvably) for j in range(i + 1, len(d))):
                return i
        return len(d) - 1

    star, by_mean = first_unbeaten(True), first_unbeaten(False)
    stated = f"{level:.0%} t-interval, tolerance {tolerance:.0%}"
    if n_seeds < 2:
        return Saturation(
            UNRESOLVED, None, d[0], math.inf, "unresolved", f"{n_seeds} seed: no interval"
        )
    if by_mean > star:
        j = next(j for j in range(star + 1, len(d)) if beats(star, j, False))
        return Saturation(
            UNRESOLVED,
            int(d[star]),
            int(d[star]),
            int(d[by_mean]),
            f"unresolved ({d[star]}–{d[by_mean]})",
            f"D = {d[j]} beats D = {d[star]} by its mean, not resolvably ({stated})",
        )
    if star == len(d) - 1 and len(d) > 1:
        return Saturation(
            NOT_SATURATED,
            None,
            int(d[-1]),
            math.inf,
            f"≥ {d[-1]}",
            f"D = {d[-1]} resolvably beats D = {d[-2]}: no plateau in the sweep ({stated})",
        )
    if star == 0:
        return Saturation(
            SATURATED, int(d[0]), 1, int(d[0]), f"≤ {d[0]}", f"flat from the first D ({stated})"
        )
    return Saturation(
        SATURATED,
        int(d[star]),
        int(d[star]),
        int(d[star]),
        str(int(d[star])),
        f"a larger D resolvably beats D = {d[star - 1]}; none beats D = {d[star]} ({stated})",
    )


def consistent(result: Saturation, predicted) -> str:
    """Verdict of a saturation result against a prediction: ``predicted`` a set of D, or a pair
    (lo, hi) meaning lo ≤ D ≤ hi (hi may be inf). "holds" when the D the data allow all lie in
    it, "fails" when none does, "unresolved" otherwise (and whenever the seeds cannot tell)."""
    if result.status == UNRESOLVED:
        return "unresolved"
    lo, hi = result.lo, result.hi
    if isinstance(predicted, tuple):
        p_lo, p_hi = predicted
        if p_lo <= lo and hi <= p_hi:
            return "holds"
        return "fails" if hi < p_lo or lo > p_hi else "unresolved"
    allowed = set(predicted)
    if math.isinf(hi):
        return "fails" if lo > max(allowed) else "unresolved"
    span = set(range(int(lo), int(hi) + 1))
    if span <= allowed:
        return "holds"
    return "fails" if not span & allowed else "unresolved"


def from_runs(runs, column: str, increasing: bool, **kw) -> Saturation:
    """:func:`saturation` of a long table with columns D, seed and ``column``."""
    wide = runs.pivot_table(index="D", columns="seed", values=column, aggfunc="first")
    return saturation(wide.index.to_numpy(), wide.to_numpy(), increasing, **kw)
