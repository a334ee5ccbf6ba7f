"""The convergence measure of every verdict on trained models (analyses/convergence.py)."""

import numpy as np

from crl_approx.analyses.convergence import NOT_CONVERGED, cell_convergence, gate


def cosine_tail(total_drop: float, n: int = 10) -> list[float]:
    """A validation loss that falls under a cosine schedule to its last checkpoint: most of the
    fall early, little in the last fifth (where the learning rate is below a tenth of its peak)."""
    t = np.arange(1, n + 1) / n
    progress = t - np.sin(2 * np.pi * t) / (2 * np.pi)  # ∫ of the cosine schedule, 0 → 1
    return list(1.0 - total_drop * progress)


def test_a_run_still_falling_at_its_end_has_not_converged_even_when_its_tail_is_small():
    """The 600-step Experiment R case: the last fifth drops little (cosine schedule) but every
    run's best checkpoint is its last. Judging by the drop alone (the mutation, the first version
    of the gate) calls it converged."""
    hist = cosine_tail(0.2)
    c = cell_convergence([hist] * 3, effect=0.1)
    assert c["drop_over_effect"] <= 0.5  # the drop alone would pass it
    assert c["best_at_end"] == "3/3" and not c["converged"]
    assert gate("fails", c["converged"]) == NOT_CONVERGED


def test_a_run_whose_best_checkpoint_is_mid_run_and_tail_small_has_converged():
    overfit = [1.0, 0.8, 0.7, 0.65, 0.64, 0.64, 0.645, 0.65, 0.652, 0.653]
    c = cell_convergence([overfit] * 3, effect=0.1)
    assert c["best_at_end"] == "0/3" and c["converged"]
    assert gate("fails", c["converged"]) == "fails"


def test_the_majority_of_seeds_decides_where_the_best_checkpoint_is():
    mid = [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    c = cell_convergence([mid, mid, cosine_tail(0.01)], effect=0.1)
    assert c["best_at_end"] == "1/3" and c["converged"]
    c = cell_convergence([mid, cosine_tail(0.01), cosine_tail(0.01)], effect=0.1)
    assert c["best_at_end"] == "2/3" and not c["converged"]
