"""Training dynamics: weighted principal angles, capture and acquisition order against known
answers, the learned coefficients and the re-weighting refit on the mixture's spectrum, the
verdicts, and the early checkpoints that must leave training bitwise unchanged."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from crl_approx.analyses.dynamics import (
    acquisition,
    alignment_verdict,
    checkpoint_series,
    order_verdict,
    summary_table,
)
from crl_approx.models.data import gmm_pairs
from crl_approx.models.gmm import GaussianMixture
from crl_approx.numerics.alignment import (
    acquisition_steps,
    capture_fractions,
    centred,
    learned_coefficients,
    order_correlation,
    principal_cosines,
    subspace_alignment,
)
from crl_approx.numerics.floor import rank_d_floor, recombination_excess
from crl_approx.numerics.spectrum import infonce_loss, operator_spectrum
from crl_approx.training.cells import train_gmm

TAU = 0.5
MIX = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}


@pytest.fixture(scope="module")
def weights():
    """A strongly non-uniform weighted point set (weights spanning 8 decades) and functions."""
    rng = np.random.default_rng(7)
    w = 10.0 ** rng.uniform(-8, 0, 300)
    return w / w.sum(), rng


def _weighted_orthogonal(a, c, w):
    """c with span(a) projected out in L2(w), everything centred."""
    a, c = centred(a, w), centred(c, w)
    gram = a.T @ (w[:, None] * a)
    return c - a @ np.linalg.solve(gram, a.T @ (w[:, None] * c))


def test_principal_angles_of_a_subspace_with_itself_and_an_orthogonal_one(weights):
    w, rng = weights
    a = rng.normal(size=(300, 3))
    same = a @ rng.normal(size=(3, 3)) + 5.0  # another basis of the same span, plus constants
    np.testing.assert_allclose(principal_cosines(a, same, w), 1.0, atol=1e-10)
    other = _weighted_orthogonal(a, rng.normal(size=(300, 3)), w)
    np.testing.assert_allclose(principal_cosines(a, other, w), 0.0, atol=1e-8)
    # orthogonal under w, not under uniform weights: the weights are what the angles use
    assert principal_cosines(a, other, np.full(300, 1 / 300)).max() > 0.1
    assert subspace_alignment(a, other, w) == pytest.approx({"mean_cos2": 0, "min_cos2": 0})


def test_constants_are_compared_modulo_the_constant_function(weights):
    """A constant added to every learned function (what InfoNCE cannot see on the g side) leaves
    the centred alignment at 1; the raw comparison sees it."""
    w, rng = weights
    a = rng.normal(size=(300, 2))
    shifted = a + np.array([3.0, -2.0])
    assert principal_cosines(a, shifted, w).min() == pytest.approx(1.0, abs=1e-10)
    assert principal_cosines(a, shifted, w, centre=False).min() < 0.99


def test_capture_fraction_of_a_mixed_target(weights):
    """t = u + 2v with u in span(a) and v ⟂ span(a) in L2(w): the fraction of t captured is
    ‖u‖²/(‖u‖² + 4‖v‖²)."""
    w, rng = weights
    a = rng.normal(size=(300, 2))
    u = centred(a @ np.array([1.0, -0.5]), w)[:, 0]
    v = _weighted_orthogonal(a, rng.normal(size=(300, 1)), w)[:, 0]
    nu, nv = w @ u**2, w @ v**2
    got = capture_fractions(a, np.stack([u + 2 * v, u, v], 1), w)
    np.testing.assert_allclose(got, [nu / (nu + 4 * nv), 1.0, 0.0], atol=1e-9)


def _rotating_path(order, steps, w, rng):
    """Targets ψ_1..ψ_4 and a path f(t) whose k-th column turns from a direction orthogonal to
    every target into ψ_k, direction ``order[j]`` finishing turning at step 2**(2j + 2)."""
    basis = np.linalg.qr(rng.normal(size=(300, 9)))[0]
    funcs = basis / np.sqrt(w)[:, None]  # orthonormal in L2(w) ...
    funcs = centred(funcs, w)[:, 1:]  # ... centred (8 left, still independent)
    q = np.linalg.qr(np.sqrt(w)[:, None] * funcs)[0] / np.sqrt(w)[:, None]
    psi, chi = q[:, :4], q[:, 4:8]
    done = {k: 2.0 ** (2 * j + 2) for j, k in enumerate(order)}
    path = []
    for t in steps:
        theta = [np.pi / 2 * max(0.0, 1 - np.log2(t) / np.log2(done[k])) for k in range(4)]
        path.append(np.cos(theta) * psi + np.sin(theta) * chi)
    return psi, path, done


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (2, 0, 3, 1), (3, 2, 1, 0)])
def test_a_synthetic_rotating_path_recovers_its_order(weights, order):
    w, rng = weights
    steps = 2.0 ** np.arange(0, 9)
    psi, path, done = _rotating_path(order, steps, w, rng)
    capture = np.stack([capture_fractions(f, psi, w) for f in path])
    got = acquisition_steps(steps, capture, 0.999)
    np.testing.assert_array_equal(got, [done[k] for k in range(4)])
    expected_rho = np.corrcoef(np.arange(4), np.argsort(order))[0, 1]  # ranks are 0..3
    assert order_correlation(got) == pytest.approx(expected_rho)
    # the same path as learned coefficients (capture as m_i) through the analysis's acquisition
    rows = pd.DataFrame(
        [
            {"step": t, "direction": i + 1, "coefficient": c, "f_capture": c}
            for t, cap in zip(steps, capture, strict=True)
            for i, c in enumerate(cap)
        ]
    )
    dyn = {"learned_min": 0.25, "coefficient_fraction": 0.999, "capture_threshold": 0.999}
    acq = acquisition(rows, dyn)
    np.testing.assert_array_equal(acq["steps_coefficient"], [done[k] for k in range(4)])
    assert acq["rho_coefficient"] == pytest.approx(expected_rho)
    assert acq["n_learned"] == 4


def test_never_learned_directions_rank_last_in_the_order():
    """Issue 26, finding 1 (samples D = 8 seed 2): ψ_2 is never learned while ψ_3 is, at a later
    step than ψ_1. Dropping ψ_2 before counting (the old ``acquisition``) gave ρ = +1 and "strictly
    ordered"; ranked last, ρ = Spearman((1, 2, 3), (3, ∞, 8)) = 0.5 and the run is not strict."""
    from crl_approx.analyses.dynamics import strictly_ordered

    path = {1: [0.1, 1.0, 1.0, 1.0], 2: [0.0, 0.0, 0.01, 0.0], 3: [0.0, 0.1, 1.0, 1.0]}
    steps = [1, 3, 8, 20]
    rows = pd.DataFrame(
        [
            {"step": t, "direction": i, "coefficient": c, "f_capture": c}
            for i, cs in path.items()
            for t, c in zip(steps, cs, strict=True)
        ]
    )
    dyn = {"learned_min": 0.25, "coefficient_fraction": 0.9, "capture_threshold": 0.9}
    acq = acquisition(rows, dyn)
    assert acq["n_learned"] == 2
    assert acq["rho_coefficient"] == pytest.approx(0.5)
    assert not strictly_ordered(acq["steps_coefficient"])


def test_order_correlation_edge_cases():
    assert np.isnan(order_correlation([5.0]))
    assert np.isnan(order_correlation([3.0, 3.0, 3.0]))  # every direction at one step
    assert order_correlation([1.0, 4.0, np.inf]) == pytest.approx(1.0)  # never acquired: last
    assert order_correlation([np.inf, 4.0, 1.0]) == pytest.approx(-1.0)


@pytest.fixture(scope="module")
def spec():
    return operator_spectrum(GaussianMixture(**MIX), 40)


def test_learned_coefficients_of_known_scores(spec):
    """1 for every direction of τ·PMI_D, also with a per-x term c(x) added; 0 for a direction left
    out; 2 for a direction counted twice."""
    q, d = spec.quad, 4
    psi, phi, s = spec.psi(d), spec.phi(d), spec.s[:d]
    f, g = TAU * psi * np.sqrt(s), phi * np.sqrt(s)
    np.testing.assert_allclose(learned_coefficients(f, g, psi, phi, s, q.wx, q.wy, TAU), 1, 1e-9)
    cx = (np.sin(q.x) + q.x**2)[:, None]  # s + c(x): an extra column c(x) with the constant 1
    fc, gc = np.hstack([f, cx]), np.hstack([g, np.ones((q.y.size, 1))])
    np.testing.assert_allclose(learned_coefficients(fc, gc, psi, phi, s, q.wx, q.wy, TAU), 1, 1e-9)
    f2 = f * np.array([1, 0, 2, 1])
    got = learned_coefficients(f2, g, psi, phi, s, q.wx, q.wy, TAU)
    np.testing.assert_allclose(got, [1, 0, 2, 1], atol=1e-9)


def test_reweighting_refit_ignores_the_scale_and_sits_between_floor_and_score(spec):
    """The features of the truncation, scaled wrongly: their score's excess is large, the refit's
    is the same as for the right scales (a re-weighting can undo any scale), and no refit beats the
    rank-D floor."""
    d = 2
    psi, phi, s = spec.psi(d), spec.phi(d), spec.s[:d]
    l_star = infonce_loss(spec, TAU * spec.pmi, TAU)
    f, g = TAU * psi * np.sqrt(s), phi * np.sqrt(s)
    bad_f = f * np.array([3.0, 0.2])
    bad = infonce_loss(spec, bad_f @ g.T, TAU) - l_star
    good = recombination_excess(spec, f, g, TAU)
    refit = recombination_excess(spec, bad_f, g, TAU)
    floor = rank_d_floor(spec, d, TAU)["rank_d_floor_excess_risk"]
    assert refit == pytest.approx(good, rel=1e-6)
    assert floor - 1e-10 <= refit < infonce_loss(spec, f @ g.T, TAU) - l_star < bad


def test_verdicts_follow_the_numbers():
    assert alignment_verdict(2, 4, 0.95, 0.97, 0.1)[0] == "holds"
    assert alignment_verdict(2, 4, 0.95, 0.85, 0.1)[0] == "fails"
    assert alignment_verdict(8, 6, 0.99, 0.99, 0.1)[0] == "unresolved"
    # issue 26, finding 9: the resolvable directions decide when one of them is not captured
    # (samples D = 8: ψ_5, ψ_6 at 0.75, 0.69); mutation caught: ignoring ``captures``
    assert alignment_verdict(8, 6, 0.06, 0.06, 0.1, [1.0, 0.99, 0.98, 0.95, 0.75, 0.69])[0] == (
        "fails"
    )
    # and both ways: every resolvable direction captured holds (the one-sided first version,
    # the mutation, left it "inconclusive"); the statistic is the smallest capture
    assert alignment_verdict(8, 6, 0.06, 0.06, 0.1, [1.0, 0.99, 0.95]) == (
        "holds",
        "only 6 of the 8 directions have λ_i ≥ the excess; their smallest capture 0.950 vs 0.90",
        0.95,
    )
    assert math.isnan(alignment_verdict(8, 6, 0.99, 0.99, 0.1)[2])
    assert alignment_verdict(4, 6, 0.93, 0.91, 0.1)[2] == 0.91
    assert order_verdict(1, [np.nan], 0.5)[0] == "not applicable"
    assert order_verdict(4, [0.8, 0.6, np.nan], 0.5)[0] == "holds"
    assert order_verdict(4, [0.8, -0.4, 0.2], 0.5)[0] == "unresolved"
    assert order_verdict(4, [-0.8, 0.2, -0.1], 0.5)[0] == "fails"
    assert order_verdict(4, [np.nan, np.nan], 0.5)[0] == "unresolved"


GMM = MIX | {"quadrature_nodes": 30, "n_train": 1024, "n_val": 256}
TRAIN = {
    "width": 16,
    "depth": 3,
    "lr": 3e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "epochs": 2,
    "batch_size": 128,
    "population_nodes": 12,
    "population_steps": 16,
    "max_loss": 100.0,
}


def _strip(metrics):
    out = {k: v for k, v in metrics.items() if k != "train_seconds"}
    out["history"] = [{k: v for k, v in h.items() if k != "seconds"} for h in out["history"]]
    return json.dumps(out, sort_keys=True)


@pytest.mark.parametrize("objective", ["samples", "population"])
def test_early_checkpoints_leave_training_bitwise_unchanged(objective):
    """The same seeds with and without early records: bitwise the same metrics and epoch
    checkpoints; the early record at an epoch's last step equals that epoch's checkpoint."""
    pairs = [gmm_pairs(GMM, s) for s in (0, 1)] if objective == "samples" else None
    early = (1, 2, 3, 5, 8)  # 8: the end of epoch 1 for both objectives (8 batches, 16 steps)
    plain = train_gmm(GMM, TRAIN, TAU, 2, [0, 1], objective, 1, pairs)
    rec = train_gmm(GMM, TRAIN, TAU, 2, [0, 1], objective, 1, pairs, early_steps=early)
    for r in range(2):
        assert _strip(plain[1][r]) == _strip(rec[1][r])
        for key in ("epoch", "step", "f", "g"):
            np.testing.assert_array_equal(plain[2][r][key], rec[2][r][key])
        ck = rec[2][r]
        np.testing.assert_array_equal(ck["step"], [8, 16])
        np.testing.assert_array_equal(ck["early_step"], early)
        np.testing.assert_array_equal(ck["early_f"][-1], ck["f"][0])
        assert not np.array_equal(ck["early_f"][0], ck["early_f"][1])
        steps, f, _ = checkpoint_series(ck)
        np.testing.assert_array_equal(steps, [1, 2, 3, 5, 8, 16])
        np.testing.assert_array_equal(f[-1], ck["f"][-1])
    assert "early_step" not in plain[2][0]


def test_the_floor_optimum_factors_give_the_floor(spec):
    """The rank-D floor's factors, as the dynamics analysis uses them: their score has the
    floor's excess, below the truncation's, and their span is not span(ψ_1..ψ_D) at D = 4."""
    d = 4
    opt = rank_d_floor(spec, d, TAU, factors=True)
    l_star = infonce_loss(spec, TAU * spec.pmi, TAU)
    excess = infonce_loss(spec, opt["f"] @ opt["g"].T, TAU) - l_star
    assert excess == pytest.approx(opt["rank_d_floor_excess_risk"], rel=1e-12)
    assert excess < opt["truncation_excess_risk"]
    assert subspace_alignment(opt["f"], spec.psi(d), spec.quad.wx)["min_cos2"] < 0.95


def test_early_checkpoints_leave_lcgm_training_bitwise_unchanged():
    """The LCGM's training jobs record the same early steps (on its checkpoint pairs)."""
    from crl_approx.models.data import lcgm_pairs
    from crl_approx.training.cells import train_lcgm

    lcgm = {"prior": "uniform", "mean_x": 6.0, "sigma_x": 0.9, "mean_y": 3.5, "sigma_y": 1.0}
    lcgm |= {"design_seed": 2610, "K": 3, "d_x": 4, "d_y": 4, "n_train": 1024, "n_val": 256}
    lcgm |= {"n_probe_fit": 64, "n_probe_test": 64, "n_checkpoint": 32}
    pairs = [lcgm_pairs(lcgm, s) for s in (0, 1)]
    plain = train_lcgm(lcgm, TRAIN, TAU, 2, [0, 1], 1, pairs)
    rec = train_lcgm(lcgm, TRAIN, TAU, 2, [0, 1], 1, pairs, early_steps=(1, 3, 8))
    for r in range(2):
        assert _strip(plain[1][r]) == _strip(rec[1][r])
        for key in ("epoch", "step", "f", "g"):
            np.testing.assert_array_equal(plain[2][r][key], rec[2][r][key])
        np.testing.assert_array_equal(rec[2][r]["early_f"][-1], rec[2][r]["f"][0])
        assert rec[2][r]["early_f"].shape == (3, 32, 2)


def test_strict_order_counts_ties_and_inversions_as_not_ordered():
    """ρ ≥ 0.5 admits an inversion (steps 3, 8, 256, 16: ρ = 0.8); strict order does not."""
    from crl_approx.analyses.dynamics import strictly_ordered
    from crl_approx.numerics.alignment import order_correlation

    assert strictly_ordered([3, 8, 256, np.nan, np.nan])  # never learned: ranked last
    assert not strictly_ordered([3, 8, 256, np.nan, 600])  # learned after a never-learned one
    assert not strictly_ordered([3, 8, 256, 16])
    assert order_correlation(np.array([3.0, 8, 256, 16])) >= 0.5
    assert not strictly_ordered([3, 256, 256])  # a tie
    assert not strictly_ordered([3, np.nan])  # one learned direction: no order observed


def _cell_rows(f_min: float) -> pd.DataFrame:
    """Two checkpoints × 2 directions × 3 seeds of one population D = 2 cell whose final excess
    (1e-4) lies below both eigenvalues: every direction resolvable, the verdict reads f_min."""
    rows = []
    for seed in range(3):
        for step in (1, 100):
            for i in (1, 2):
                rows.append(
                    {
                        "objective": "population",
                        "D": 2,
                        "seed": seed,
                        "step": step,
                        "excess_risk": 1e-4,
                        "refit_excess": 5e-5,
                        "floor_excess": 1e-5,
                        "f_min_cos2": f_min,
                        "f_mean_cos2": f_min,
                        "g_min_cos2": 0.99,
                        "g_mean_cos2": 0.99,
                        "f_floor_min_cos2": 0.9,
                        "g_floor_min_cos2": 0.9,
                        "direction": i,
                        "lambda": 1.0 / i,
                        "f_capture": 0.99,
                        "g_capture": 0.99,
                        "coefficient": step / 100 / i,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("falling", "at_2b", "verdict"),
    [
        (False, None, "fails"),
        (False, 0.53, "fails"),
        (False, 0.58, "unresolved: not converged"),
        (False, 0.95, "unresolved: not converged"),
        (True, None, "unresolved: not converged"),
        (True, 0.53, "fails"),
    ],
)
def test_an_alignment_miss_fails_only_when_twice_the_budget_agrees(falling, at_2b, verdict):
    """A miss (smallest cos² 0.5 against 0.90). Without a budget check the loss measure gates it
    (flat validation loss: fails; still falling: not converged). With one, the statistic at 2B
    decides: the same verdict at 2B and a statistic within half of alignment_tol of B (0.53) and
    the miss fails, whatever the loss did; moving by more (0.58: within the tolerance, but half a
    band is what a budget check must resolve; 0.95: past the bar) the runs had not settled.
    Mutations caught (seen failing): gating on the loss measure alone (ignoring
    ``budget_agrees``) fails the fourth and sixth cases; agreement within the whole tolerance
    (the first version) fails the third."""
    from types import SimpleNamespace

    spec = SimpleNamespace(eigenvalues=np.array([1.0, 0.5, 1e-6]))
    dyn = {"alignment_tol": 0.1, "rho_holds": 0.5, "learned_min": 0.25}
    dyn |= {"coefficient_fraction": 0.5, "capture_threshold": 0.9}
    floors = {2: {"f_min_cos2": 0.9, "g_min_cos2": 0.9}}
    loss = [1.0 - (0.1 * i if falling else 0.0) for i in range(10)]
    histories = {("population", 2): [loss] * 3}
    budget = None
    if at_2b is not None:
        budget = {("population", 2): {"f_min_cos2": at_2b, "g_min_cos2": 0.99, "captures": [1, 1]}}
    row = summary_table(_cell_rows(0.5), spec, dyn, floors, histories, budget).iloc[0]
    assert row["alignment_verdict"] == verdict
    assert row["alignment_verdict_pre_registered"] == "fails"
    assert row["alignment_statistic"] == 0.5
