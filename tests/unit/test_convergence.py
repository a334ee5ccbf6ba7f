"""The convergence measure of every verdict on trained models (analyses/convergence.py).

Mutations these tests catch (each tried once and seen to fail):
* the best checkpoint "at the end" without its gain clause (the first version): a loss falling
  monotonically to lr → 0 is never converged, whatever the margin;
* the gain clause on the last checkpoint only (v[:-1].min() − v[-1]): a best second-to-last
  checkpoint that beats the earlier ones by more than the effect is missed;
* judging by the drop alone: a cell still gaining more than the effect at its end passes;
* the 2x-budget comparison reading |2B − B| < tol as "differs" (sign flipped).
"""

import numpy as np

from crl_approx.analyses.convergence import (
    CONVERGED_SHARE,
    NOT_CONVERGED,
    budget_agrees,
    cell_convergence,
    end_gain,
    gate,
)


def cosine_tail(total_drop: float, n: int = 10) -> list[float]:
    """A validation loss that falls under a cosine schedule to its last checkpoint: most of the
    fall early, little in the last fifth (where the learning rate is below a tenth of its peak)."""
    t = np.arange(1, n + 1) / n
    progress = t - np.sin(2 * np.pi * t) / (2 * np.pi)  # ∫ of the cosine schedule, 0 → 1
    return list(1.0 - total_drop * progress)


def test_a_monotone_cosine_tail_whose_end_gains_little_has_converged():
    """The population runs of Table 1: the loss falls to lr → 0, so the last checkpoint is the
    best, by 0.1 of the effect here (the runs: 1e-6 … 3e-2). The end gain is below half the
    effect: not "at the end"."""
    hist = cosine_tail(0.2)
    assert np.argmin(hist) == len(hist) - 1
    assert end_gain(hist) == np.float64(hist[-3] - hist[-1])
    c = cell_convergence([hist] * 3, effect=0.1)
    assert c["best_at_end"] == "0/3" and c["converged"]
    assert c["end_gain_over_effect"] < 0.5
    assert gate("fails", c["converged"]) == "fails"


def test_a_run_whose_end_gains_more_than_the_effect_has_not_converged():
    """Same shape, ten times the fall: the last fifth and the end gain are each ~1 × the effect."""
    c = cell_convergence([cosine_tail(2.0)] * 3, effect=0.1)
    assert c["best_at_end"] == "3/3" and not c["converged"]
    assert gate("fails", c["converged"]) == NOT_CONVERGED


def test_a_late_dip_at_the_second_to_last_checkpoint_counts_as_at_the_end():
    """The last-fifth drop is small (0.60 → 0.58 = 0.2 × effect) but the second-to-last checkpoint
    beats every earlier one by 0.10 = 1 × effect: the run is still finding better points."""
    dip = [1.0, 0.8, 0.7, 0.65, 0.62, 0.61, 0.61, 0.60, 0.50, 0.58]
    c = cell_convergence([dip] * 3, effect=0.1)
    assert c["drop_over_effect"] <= 0.5  # the drop alone would pass it
    assert c["best_at_end"] == "3/3" and not c["converged"]


def test_a_run_whose_best_checkpoint_is_mid_run_and_tail_small_has_converged():
    overfit = [1.0, 0.8, 0.7, 0.65, 0.64, 0.64, 0.645, 0.65, 0.652, 0.653]
    c = cell_convergence([overfit] * 3, effect=0.1)
    assert c["best_at_end"] == "0/3" and c["converged"]
    assert gate("fails", c["converged"]) == "fails"


def test_the_majority_of_seeds_decides_where_the_best_checkpoint_is():
    mid = [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    dip = [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.38, 0.6]  # beats 0.5 by 0.12 at the end
    c = cell_convergence([mid, mid, dip], effect=0.1)
    assert c["best_at_end"] == "1/3" and c["converged"]
    c = cell_convergence([mid, dip, dip], effect=0.1)
    assert c["best_at_end"] == "2/3" and not c["converged"]


def test_the_budget_check_reads_agreement_within_the_tolerance():
    assert budget_agrees(0.836, 0.85, 0.1)
    assert not budget_agrees(0.10, 0.95, 0.1)


def test_a_run_read_at_its_best_checkpoint_is_judged_on_the_running_best():
    """Experiment R reads each run at its best checkpoint. A noisy plateau (measured: K = 2, D = 2
    at 1600 steps, seed 0) whose best checkpoint is mid-run and whose validation loss rises, then
    dips back above the best, "drops" over the last fifth by more than the effect; its running best
    does not move there, so the number the verdict reads cannot. A run still falling is unconverged
    either way. Mutation caught (seen failing): ``at_best`` ignored (the plain drop)."""
    plateau = [2.6975, 2.6941, 2.6885, 2.6877, 2.684, 2.6837, 2.6886, 2.6933, 2.687, 2.6858]
    effect = 0.002
    assert cell_convergence([plateau], effect)["drop_over_effect"] > CONVERGED_SHARE
    c = cell_convergence([plateau], effect, at_best=True)
    assert c["last_fifth_drop"] == 0.0 and c["converged"]
    falling = [2.70 - 0.003 * i for i in range(10)]
    assert not cell_convergence([falling], effect, at_best=True)["converged"]


def test_the_gate_holds_a_success_to_the_same_standard_as_a_miss():
    """A "holds" on runs that had not converged is "unresolved: not converged" like a "fails";
    other verdicts pass through. Mutation caught (seen failing): gating "fails" only."""
    assert gate("holds", False) == NOT_CONVERGED
    assert gate("holds", True) == "holds"
    assert gate("inconclusive", False) == "inconclusive"
