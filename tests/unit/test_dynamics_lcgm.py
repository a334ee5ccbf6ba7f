"""The LCGM sweep's dynamics against known constructions: f an exact linear map of the exact
posteriors plus constants (alignment 1), f in the posteriors' orthogonal complement (alignment 0),
a learned span strictly inside the target (inside 1, alignment < 1), and the verdict rules."""

import numpy as np
import pandas as pd
import pytest

from crl_approx.analyses.dynamics_lcgm import (
    checkpoint_series,
    combined,
    pass_step,
    run_rows,
    summary_table,
    verdict,
)
from crl_approx.models.lcgm import LatentClassModel
from crl_approx.numerics.alignment import centred, inside_fraction, subspace_alignment

LCGM = {
    "K": 4,
    "d_x": 6,
    "d_y": 6,
    "prior": "uniform",
    "mean_x": 3.0,
    "sigma_x": 1.0,
    "mean_y": 2.0,
    "sigma_y": 1.0,
    "design_seed": 5,
}


@pytest.fixture(scope="module")
def targets():
    """Exact posteriors and log ratios at 400 draws of a small LCGM, uniform weights."""
    model = LatentClassModel.from_config(LCGM)
    x, y, _ = model.sample(400, np.random.default_rng(3))
    w = np.full(400, 1 / 400)
    return np.exp(model.log_post_x(x)), model.log_ratio_y(y), w


def complement(target, w, d, rng):
    """d random centred functions orthogonal (in L2 of the sample) to the centred target."""
    t = np.sqrt(w)[:, None] * centred(target, w)
    q, _ = np.linalg.qr(t)
    z = np.sqrt(w)[:, None] * centred(rng.standard_normal((len(w), d)), w)
    z -= q @ (q.T @ z)
    return z / np.sqrt(w)[:, None]


def test_exact_linear_map_of_posteriors_plus_constants_aligns(targets):
    # catches: dropping the centring (the constants would pull raw alignment below 1), or a
    # posterior/log-ratio mix-up in the target
    post, ratio, w = targets
    rng = np.random.default_rng(0)
    f = post @ rng.standard_normal((4, 5)) + rng.standard_normal(5) * 10
    g = ratio @ rng.standard_normal((4, 4)) + rng.standard_normal(4) * 10
    assert subspace_alignment(f, post, w)["min_cos2"] == pytest.approx(1, abs=1e-9)
    assert subspace_alignment(g, ratio, w)["min_cos2"] == pytest.approx(1, abs=1e-9)
    assert subspace_alignment(g, ratio, w, centre=False)["min_cos2"] < 0.99


def test_orthogonal_complement_aligns_to_zero(targets):
    # catches: an inner product without the weights, or a basis that is not orthonormalised
    post, _, w = targets
    f = complement(post, w, 3, np.random.default_rng(1))
    assert subspace_alignment(f, post, w)["mean_cos2"] == pytest.approx(0, abs=1e-12)
    assert inside_fraction(f, post, w) == pytest.approx(0, abs=1e-12)


def test_inside_fraction_is_over_the_learned_span(targets):
    # catches: averaging over the target's directions instead (would give 2/3, not 1), and a
    # learned direction outside the target that is not counted as 0 (would not give 1/2)
    post, _, w = targets
    rng = np.random.default_rng(2)
    f = post @ rng.standard_normal((4, 2))  # 2 directions inside a rank-3 (centred) target
    assert inside_fraction(f, post, w) == pytest.approx(1, abs=1e-9)
    assert subspace_alignment(f, post, w)["mean_cos2"] == pytest.approx(2 / 3, abs=1e-9)
    half = np.column_stack([f[:, 0], complement(post, w, 1, rng)[:, 0]])
    assert inside_fraction(half, post, w) == pytest.approx(0.5, abs=1e-9)


def test_rows_and_table_judge_alignment_or_inside_by_rank(targets):
    # catches: judging the alignment below the target rank (a 2-D span inside the posteriors
    # would then fail), and a pass step taken from the last instead of the first passing step
    post, ratio, w = targets
    rng = np.random.default_rng(4)
    far = [complement(t, w, 2, rng) for t in (post, ratio)]
    near = [t @ rng.standard_normal((4, 2)) for t in (post, ratio)]
    rows = []
    for seed in (0, 1):
        fs, gs = np.stack([far[0], near[0], near[0]]), np.stack([far[1], near[1], near[1]])
        rows += run_rows(post, ratio, [1, 10, 100], fs, gs, {"D": 2, "seed": seed})
    table = summary_table(pd.DataFrame(rows), {"f": 3, "g": 4}, 0.1)
    rec = table.iloc[0]
    assert rec["f_judged"] == "inside" and rec["f_judged_final"] == pytest.approx(1)
    assert rec["f_pass_step"] == 10 and rec["verdict"] == "holds"


def test_verdicts_and_pass_step():
    # catches: a verdict on the mean alone when the seeds straddle the bar, and inf → a step
    assert verdict([0.95, 0.97], 0.1)[0] == "holds"
    assert verdict([0.5, 0.6], 0.1)[0] == "fails"
    assert verdict([0.85, 0.95], 0.1)[0] == "unresolved"
    assert combined(["holds", "unresolved"]) == "unresolved"
    assert combined(["holds", "fails"]) == "fails"
    assert pass_step([1, 2, 3], [0.1, 0.2, 0.3], 0.9) == np.inf


def test_epoch_only_checkpoints_get_steps():
    # catches: epoch numbers taken as steps for checkpoints written before steps were recorded
    ck = {"epoch": np.array([1, 2]), "f": np.zeros((2, 3, 1)), "g": np.zeros((2, 3, 1))}
    steps, _, _ = checkpoint_series(ck, 195)
    assert steps.tolist() == [195, 390]


def test_a_miss_still_rising_by_its_distance_to_the_bar_is_not_converged():
    """The gate of prediction 3's misses on known curves: the rise is read from the checkpoint at
    half the last step (not the first, not the previous one); a miss is gated only when that
    rise reaches the bar again; a hold is never gated."""
    from crl_approx.analyses.dynamics_lcgm import second_half_rise, still_moving

    steps, values = [1, 10, 50, 60, 100], [0.1, 0.5, 0.70, 0.80, 0.85]
    assert second_half_rise(steps, values) == pytest.approx(0.15)  # 0.85 − 0.70 (step 50)
    assert second_half_rise([100], [0.3]) == 0.0
    assert still_moving([0.85, 0.85], [0.06, 0.04], 0.1)  # 0.85 + 0.05 reaches 0.90
    assert not still_moving([0.85, 0.85], [0.04, 0.04], 0.1)  # 0.89 < 0.90: a converged miss
    assert not still_moving([0.95], [0.3], 0.1)  # a hold


def lcgm_d(D, g_verdict, g_final=0.88, moving=False) -> dict:
    """One D of a crafted dynamics_lcgm table: f holds (0.96), g as given, only g maybe moving."""
    return {
        "D": D,
        "f_verdict": "holds",
        "g_verdict": g_verdict,
        "verdict": combined(["holds", g_verdict]),
        "f_judged_final": 0.96,
        "g_judged_final": g_final,
        "f_still_moving": False,
        "g_still_moving": moving,
    }


def lcgm_tables(*rows) -> dict:
    return {"dynamics_lcgm": pd.DataFrame(list(rows))}


def test_prediction_3_reads_a_still_rising_miss_as_not_converged():
    """The claims row: D = 8's g misses while still rising (not converged), D = 4's g misses and
    has stopped (fails): the row fails; with D = 4 removed it is not converged, the ungated
    rule's fail beside it."""
    from crl_approx.analyses.claims import dynamics as claims_dynamics
    from crl_approx.numerics.claims import Verdict

    both = lcgm_tables(lcgm_d(4, "fails"), lcgm_d(8, "fails", moving=True))
    (row,) = claims_dynamics.lcgm(both, {})
    assert row["verdict"] == Verdict.FAILS
    assert row["parts"] == "D = 4: fails; D = 8: not converged"
    assert "rule:" not in row["reading"]
    (row,) = claims_dynamics.lcgm(lcgm_tables(lcgm_d(8, "fails", moving=True)), {})
    assert row["verdict"] == Verdict.NOT_CONVERGED
    assert row["reading"] == "f holds at D = 8; g at no D (best 0.880); rule: fails"
    assert row["measured"] == "1 not converged of 1 D"
    (row,) = claims_dynamics.lcgm(both, {})
    assert row["measured"] == "1 fails, 1 not converged of 2 D"


def test_prediction_3_says_when_the_best_side_straddles_the_bar():
    """A best mean above the bar whose seeds straddle it is not a hold; the reading says so
    (the default run's g: best 0.901, unresolved), and a plain miss says nothing more."""
    from crl_approx.analyses.claims import dynamics as claims_dynamics

    tables = lcgm_tables(lcgm_d(4, "fails", 0.85), lcgm_d(8, "unresolved", 0.901))
    (row,) = claims_dynamics.lcgm(tables, {})
    straddles = "g at no D (best 0.901, unresolved)"  # its seeds straddle the bar
    assert row["reading"] == f"f holds at D = 4, 8; {straddles}"
    tables = lcgm_tables(lcgm_d(4, "fails", 0.85), lcgm_d(8, "fails", 0.88))
    (row,) = claims_dynamics.lcgm(tables, {})
    assert row["reading"] == "f holds at D = 4, 8; g at no D (best 0.880)"
