"""Convergence of trained runs, measured, for every verdict on trained models (issue 26): a miss on
runs that had not converged is "unresolved: not converged", never "fails"; so is a success ("holds"
needs converged runs as much as "fails" does: the developers' guide's rule).

Per run, from its validation loss per checkpoint (``metrics["history"]``):

* the best checkpoint's position (1-based, of n);
* the drop over the last fifth of training: the validation loss at the checkpoint that starts the
  last fifth (checkpoint ⌈0.8·n⌉) minus the last one (> 0: still falling). For a number read at
  the run's best checkpoint (early stopping: Experiment R) the drop is that of the *running best*:
  the best validation loss up to the checkpoint that starts the last fifth minus the best over the
  whole run (≥ 0), what the last fifth added to the number the verdict reads. The plain drop there
  read noise as progress: a run whose best checkpoint lies mid-run and whose last value is above it
  could still "drop" over the last fifth (measured: the Experiment R cell K = 2, D = 2 at 1600
  steps, best checkpoint 5.7 of 10 on average, plain drop 1.0 × the effect, running-best drop 0).

Per cell (seed means), the drop is set against the *effect the verdict reads*: the saturation
rule's tolerance at the cell (:data:`..numerics.tiers.CLOSE_TOLERANCE` times the value the verdict
compares, in the validation loss's units: an InfoNCE excess or loss difference). The cell counts as
converged when both hold:

* the drop is at most :data:`CONVERGED_SHARE` of that effect, and
* in most of its runs the best checkpoint is not *at the end*: the best checkpoint counts as at
  the end when it is the last or the one before it **and** the gain it brings — the earlier
  checkpoints' best validation loss minus the last two's — exceeds :data:`CONVERGED_SHARE` of the
  effect.

The second condition was added when a review found every 600-step Experiment R cell "converged"
by the drop alone (under the cosine schedule the learning rate of the last fifth is below a tenth
of its peak, so the drop there is small whether or not the run has converged), although 20 of its
21 K = 10 runs had their best checkpoint at the end. Its gain clause came next: a loss that falls
monotonically to lr → 0 makes the last checkpoint the best by margins far below anything a verdict
reads (the population runs of Table 1), and without the clause no such run could ever count as
converged, so no miss on it could fail. With it, the condition bites on runs whose last
checkpoints still gain more than half the effect (often a late dip on a noisy validation loss);
for a monotone fall the gain is at most the drop, so the two conditions then agree.

A small loss gain is not a small change in every statistic (a squared cosine of a direction with a
tiny eigenvalue moves the loss by little). Where a verdict needs more, it compares its statistic
at the budget B with a run at 2B (:func:`budget_agrees`; the dynamics: config
``dynamics.budget_check``; Experiment R: benchmarks/digits_budget.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics.claims import Verdict

#: a cell is converged when its last-fifth validation drop is at most this share of the effect
CONVERGED_SHARE = 0.5
NOT_CONVERGED = Verdict.NOT_CONVERGED


def run_convergence(val_losses, at_best: bool = False) -> dict:
    """Best checkpoint position (1-based), the number of checkpoints and the last-fifth drop (of
    the running best when ``at_best``: the run is read at its best checkpoint)."""
    v = np.asarray(val_losses, float)
    n = v.size
    start = max(1, math.ceil(0.8 * n))  # 1-based checkpoint that opens the last fifth
    drop = (v[:start].min() - v.min()) if at_best else (v[start - 1] - v[-1])
    return {
        "checkpoints": n,
        "best_checkpoint": int(np.argmin(v)) + 1,
        "last_fifth_drop": float(drop) if n > 1 else math.nan,
    }


def end_gain(val_losses) -> float:
    """The last two checkpoints' gain over the earlier best: min(earlier) − min(last two) (> 0 when
    the end improves on every earlier checkpoint); NaN with fewer than three checkpoints."""
    v = np.asarray(val_losses, float)
    return float(v[:-2].min() - v[-2:].min()) if v.size > 2 else math.nan


def cell_convergence(histories, effect: float, at_best: bool = False) -> dict:
    """Seed means of :func:`run_convergence` over ``histories`` (one validation-loss list per
    seed; ``at_best``: runs read at their best checkpoint) against ``effect`` (> 0, the verdict's
    tolerance in loss units): the drop's ratio to it, how many runs' best checkpoint is at the end
    by more than CONVERGED_SHARE × effect, and whether the cell converged."""
    runs = [run_convergence(h, at_best) for h in histories]
    drop = float(np.mean([r["last_fifth_drop"] for r in runs]))
    ratio = drop / effect if effect > 0 else math.inf
    gains = [end_gain(h) for h in histories]
    at_end = [
        r["checkpoints"] > 1
        and r["best_checkpoint"] >= r["checkpoints"] - 1
        and not gain <= CONVERGED_SHARE * effect  # NaN (two checkpoints) counts as at the end
        for r, gain in zip(runs, gains, strict=True)
    ]
    return {
        "best_checkpoint_mean": float(np.mean([r["best_checkpoint"] for r in runs])),
        "checkpoints": runs[0]["checkpoints"],
        "best_at_end": f"{sum(at_end)}/{len(at_end)}",
        "last_fifth_drop": drop,
        "effect": effect,
        "drop_over_effect": ratio,
        "end_gain_over_effect": float(np.nanmax(gains)) / effect if effect > 0 else math.inf,
        "converged": bool(ratio <= CONVERGED_SHARE and 2 * sum(at_end) <= len(at_end)),
    }


def budget_agrees(at_b: float, at_2b: float, tolerance: float) -> bool:
    """The 2x-budget check: the verdict's statistic at 2B within ``tolerance`` of its value at B."""
    return bool(abs(at_2b - at_b) <= tolerance)


def gate(verdict: str, converged: bool) -> str:
    """A verdict on runs that did not converge is neither a failure nor a success: "fails" and
    "holds" become "unresolved: not converged" (more training could move either); any other
    label (a grid's "unresolved: fewer than three widths", "not applicable") passes through. On a
    :class:`~crl_approx.numerics.claims.Verdict` it is :func:`crl_approx.numerics.claims.gate`."""
    decided = verdict in (Verdict.HOLDS, Verdict.FAILS)
    return Verdict.NOT_CONVERGED if decided and not converged else verdict
