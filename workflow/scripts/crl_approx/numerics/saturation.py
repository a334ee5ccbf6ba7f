"""One noise-aware saturation rule for every D sweep (LCGM probes and excess, Experiment R's class
pairings and halves). A new rule, first dated 2026-12-01 and revised the same day (issue 26): it
replaces, for the verdicts, the elbow of Experiment 3 (:func:`..analyses.probes.elbow`), which read
only the seed-mean curve and had no noise floor (a flat curve that drifts by noise had no elbow).

It reads the per-seed values, oriented so that larger is better. For D < D′ the improvement of D′
over D is q(D′) − q(D) per seed (paired over seeds when every D has the same seeds, Welch
otherwise), and the tolerance at D is ``tolerance``·|mean q(D)| (:data:`.tiers.CLOSE_TOLERANCE`,
the verdict tiers' relative tolerance).

* **Comparison.** D′ beats D when the one-sided Student-t test of "mean improvement > tolerance"
  rejects (p-value of the t statistic (mean − tolerance)/se, n − 1 degrees of freedom).
* **Family.** A candidate D is compared with every larger D of the sweep (m comparisons). D is
  *resolvably beaten* when Holm's step-down procedure over those m one-sided p-values at
  family-wise level ``alpha`` (one-sided 5 %) rejects at least one of them — for "is D beaten by
  some larger D" this is its first step, the smallest p ≤ alpha/m. A long sweep does not make a
  spurious comparison decide the point.
* **By its mean.** D′ beats D by its mean when the mean improvement alone exceeds the tolerance.
* **Trend past the sweep.** The saturation point D* is the smallest D that is not resolvably
  beaten; D_m ≥ D* is the smallest D that no larger D beats by its mean (where the seed means put
  the plateau). Inside the sweep the comparisons judge every change, the cumulative ones of a slow
  curve included (D is compared with every larger D). Past the sweep's end they see nothing, so
  per seed the least-squares line of q on log D over D ≥ D_m (at least two Ds) is continued one
  more step of the sweep's last spacing, to D_next = D_max²/D_{max−1}; when what the line gains
  from D_max to D_next exceeds the tolerance (one-sided test at ``alpha`` over the seeds) the curve
  is still moving at the sweep's end and there is no saturation point in the sweep. So
  *saturated* means: no larger D of the sweep beats the point by more than the tolerance, and the
  tail's trend would not either over one more step of the sweep's last spacing. A curve that keeps
  falling by less than the tolerance per such step (e.g. 5 % per step past K) reads as saturated:
  that is the rule's resolution, stated in docs/experiment_r.md. Revisions the same day, after
  Experiment R's budget runs existed (docs/experiment_r.md lists the verdicts each changed): the
  line first started at D* (an unresolved step between D* and D_m tilted it), then at D_m but
  compared with q(D_m) (which counted the change inside the sweep a second time and turned a
  step-then-flat curve into "≥ D_max").

Results (labels):

* ``saturated`` at D* (``"D*"``), or ``"≤ D_min"`` when D* is the sweep's first D;
* ``not saturated`` (``"≥ D_max"``) when D* is the last D, or the trend past the sweep
  resolvably continues;
* ``unresolved`` when a larger D beats D* by its mean but not resolvably (``"unresolved
  (D*–D_m)"``, D_m the smallest D no larger D beats by its mean), when the continued trend gains
  more than the tolerance by its mean but not resolvably (``"unresolved (≥ D*)"``), and with fewer
  than two seeds.

The family-wise level bounds the chance that the rule places the point past a true saturation
point D_s (that needs a false "beaten" at D_s: probability ≤ alpha), not the chance of placing it
early; the mean-based "unresolved" is the guard on that side. :func:`consistent` turns a result
into a verdict against a predicted set of D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .claims import Verdict
from .tiers import CLOSE_TOLERANCE

SATURATED = "saturated"
NOT_SATURATED = "not saturated"
UNRESOLVED = "unresolved"
#: the date the rule was written (a new, post hoc prediction rule; docs/experiment_r.md); the
#: family-wise control and the trend check were added the same day, the trend check revised twice
#: after Experiment R's budget runs existed (module docstring)
RULE_DATE = "2026-12-01"
#: family-wise level of each candidate D's one-sided comparisons (Holm), and of the trend check
ALPHA = 0.05
#: the rule's stated level, for tables and notes
LEVEL_TEXT = f"one-sided, family-wise {ALPHA:.0%} (Holm over the larger Ds)"


@dataclass(frozen=True)
class Saturation:
    status: str  #: SATURATED, NOT_SATURATED or UNRESOLVED
    at: int | None  #: D* (the smallest D no larger D resolvably beats)
    lo: float  #: the range of D the data allow for the saturation point: [lo, hi]
    hi: float
    label: str
    reason: str


def _t_p(mean: float, threshold: float, se: float, dof: float) -> float:
    """One-sided p-value of "true mean > threshold" from a t statistic (0 or 1 when se = 0)."""
    if not math.isfinite(se) or dof < 1:
        return math.nan
    if se == 0:
        return 0.0 if mean > threshold else 1.0
    return float(stats.t.sf((mean - threshold) / se, dof))


def improvement(a, b, threshold: float) -> tuple[float, float]:
    """(mean, one-sided p) of "mean(b − a) > threshold": paired when a and b hold the same seeds
    (no NaN in either), Welch otherwise; p NaN with fewer than two seeds."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape == b.shape and np.isfinite(a).all() and np.isfinite(b).all():
        diff = b - a
        mean = float(diff.mean())
        if diff.size < 2:
            return mean, math.nan
        se = float(diff.std(ddof=1)) / math.sqrt(diff.size)
        return mean, _t_p(mean, threshold, se, diff.size - 1)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    mean = float(b.mean() - a.mean())
    if a.size < 2 or b.size < 2:
        return mean, math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if se > 0 else 1.0
    return mean, _t_p(mean, threshold, se, dof)


def holm_any(pvalues, alpha: float) -> bool:
    """Whether Holm's step-down procedure at family-wise level ``alpha`` rejects at least one of
    ``pvalues`` (NaN never rejects): its first step, the smallest p ≤ alpha/m."""
    p = np.asarray(pvalues, float)
    return bool(p.size and np.nanmin(p, initial=np.inf) <= alpha / p.size)


def trend_past(d, vals, star: int, threshold: float) -> tuple[float, float, int]:
    """The trend over D ≥ d[star] (the caller passes D_m's index): per seed the least-squares
    line of the oriented q on log D over ``d[star:]``, continued one step of the sweep's last
    spacing to D_next = D_max²/D_{max−1}; returns (mean, one-sided p) of "the line gains more than
    ``threshold`` from D_max to D_next" and D_next (rounded). The change inside the sweep is not
    counted again: the comparisons already judged it. Seeds with a NaN in the tail are left out."""
    x = np.log(d[star:].astype(float))
    y = np.stack([v for v in vals[star:]])  # (Ds, seeds)
    keep = np.isfinite(y).all(axis=0)
    y = y[:, keep]
    x_next = 2 * x[-1] - (x[-2] if x.size > 1 else x[-1])
    slope = np.polyfit(x, y, 1)[0] if x.size > 1 else np.zeros(y.shape[1])
    gain = slope * (x_next - x[-1])  # what the line adds past the sweep's last D
    n = gain.size
    mean = float(gain.mean()) if n else math.nan
    se = float(gain.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    p = _t_p(mean, threshold, se, n - 1) if n > 1 else math.nan
    return mean, p, round(math.exp(x_next))


def saturation(
    dims,
    per_seed,
    increasing: bool,
    alpha: float = ALPHA,
    tolerance: float = CLOSE_TOLERANCE,
    trend: bool = True,
) -> Saturation:
    """The saturation point of a sweep: ``per_seed[i]`` the seed values at ``dims[i]`` (rows aligned
    by seed for the paired comparison); ``increasing``: whether larger values are better;
    ``trend``: whether to run the trend check past D* (off only to show what it catches)."""
    d = np.asarray(dims, int)
    order = np.argsort(d)
    d = d[order]
    sign = 1.0 if increasing else -1.0
    vals = [sign * np.asarray(per_seed[i], float) for i in order]
    if any(not np.isfinite(v).any() for v in vals):
        bad = [int(x) for x, v in zip(d, vals, strict=True) if not np.isfinite(v).any()]
        raise ValueError(f"no finite seed value at D = {bad}")
    n_seeds = min(int(np.isfinite(v).sum()) for v in vals)
    stated = f"{LEVEL_TEXT}, tolerance {tolerance:.0%}"
    if n_seeds < 2:
        return Saturation(
            UNRESOLVED, None, d[0], math.inf, "unresolved", f"{n_seeds} seed: no interval"
        )

    def threshold(i):
        return tolerance * abs(float(np.nanmean(vals[i])))

    def compare(i, j):
        return improvement(vals[i], vals[j], threshold(i))

    def beaten(i) -> bool:
        return holm_any([compare(i, j)[1] for j in range(i + 1, len(d))], alpha)

    def beaten_by_mean(i) -> bool:
        return any(compare(i, j)[0] > threshold(i) for j in range(i + 1, len(d)))

    star = next((i for i in range(len(d)) if not beaten(i)), len(d) - 1)
    by_mean = next((i for i in range(len(d)) if not beaten_by_mean(i)), len(d) - 1)

    def not_saturated(reason: str) -> Saturation:
        return Saturation(NOT_SATURATED, None, int(d[-1]), math.inf, f"≥ {d[-1]}", reason)

    if star == len(d) - 1 and len(d) > 1:
        return not_saturated(
            f"D = {d[-1]} resolvably beats D = {d[-2]}: no plateau in the sweep ({stated})"
        )
    if trend and len(d) > 1:
        base = max(star, by_mean)
        gain, p, d_next = trend_past(d, vals, base, threshold(base))
        why = (
            f"the trend over D ≥ {d[base]} continued from D = {d[-1]} to D = {d_next} gains "
            f"{gain:+.3g} against the tolerance {threshold(base):.3g}"
        )
        if np.isfinite(p) and p <= alpha:
            return not_saturated(f"{why}, resolvably: still moving at the sweep's end ({stated})")
        if gain > threshold(base):
            return Saturation(
                UNRESOLVED,
                int(d[star]),
                int(d[star]),
                math.inf,
                f"unresolved (≥ {d[star]})",
                f"{why}, by its mean, not resolvably ({stated})",
            )
    if by_mean > star:
        j = next(j for j in range(star + 1, len(d)) if compare(star, j)[0] > threshold(star))
        return Saturation(
            UNRESOLVED,
            int(d[star]),
            int(d[star]),
            int(d[by_mean]),
            f"unresolved ({d[star]}–{d[by_mean]})",
            f"D = {d[j]} beats D = {d[star]} by its mean, not resolvably ({stated})",
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
    it, "fails" when none does, "unresolved" otherwise. An unresolved result is read by its range
    [D*, D_m]: wholly inside the prediction holds, wholly above it (D* above) fails, and wholly
    below it is "unresolved": D_m is where the seed means put the plateau, not a bound, so the
    point may lie above it."""
    lo, hi = result.lo, result.hi
    # D* (lo) is a bound: every smaller D is resolvably beaten. D_m (hi of an unresolved range) is
    # the seed means' point, not a bound: a range below the prediction does not fail it.
    below_ok = result.status != UNRESOLVED
    if isinstance(predicted, tuple):
        p_lo, p_hi = predicted
        if p_lo <= lo and hi <= p_hi:
            return Verdict.HOLDS
        return Verdict.FAILS if lo > p_hi or (hi < p_lo and below_ok) else Verdict.UNRESOLVED
    allowed = set(predicted)
    if math.isinf(hi):
        return Verdict.FAILS if lo > max(allowed) else Verdict.UNRESOLVED
    span = set(range(int(lo), int(hi) + 1))
    if span <= allowed:
        return Verdict.HOLDS
    if lo > max(allowed) or (not span & allowed and below_ok):
        return Verdict.FAILS
    return Verdict.UNRESOLVED


def from_runs(runs, column: str, increasing: bool, **kw) -> Saturation:
    """:func:`saturation` of a long table with columns D, seed and ``column``."""
    wide = runs.pivot_table(index="D", columns="seed", values=column, aggfunc="first")
    return saturation(wide.index.to_numpy(), wide.to_numpy(), increasing, **kw)
