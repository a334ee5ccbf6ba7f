"""The best achievable rank-D InfoNCE excess."""

import numpy as np
import pytest
from scipy.optimize import minimize

from crl_approx.models.gmm import GaussianMixture
from crl_approx.numerics.floor import rank_d_floor
from crl_approx.numerics.spectrum import infonce_loss, operator_spectrum

TAU = 0.5


@pytest.fixture(scope="module")
def spec():
    return operator_spectrum(GaussianMixture(1.2, 1.0, 1.2, 1.0), 60)


def test_floor_is_below_the_truncation_and_positive(spec):
    for d in (1, 2, 3):
        row = rank_d_floor(spec, d, TAU)
        assert 0 < row["rank_d_floor_excess_risk"] < row["truncation_excess_risk"]
        assert "CONVERGENCE" in row["lbfgs_message"]


def test_floor_values_on_the_paper_mixture(spec):
    # exploration (PAPER.md): 9.94e-3 and 4.59e-4 at D = 1, 2; converged to these digits at 60 nodes
    assert rank_d_floor(spec, 1, TAU)["rank_d_floor_excess_risk"] == pytest.approx(
        9.9386e-3, rel=1e-3
    )
    assert rank_d_floor(spec, 2, TAU)["rank_d_floor_excess_risk"] == pytest.approx(
        4.5869e-4, rel=1e-3
    )


def test_floor_decreases_in_d(spec):
    floors = [rank_d_floor(spec, d, TAU)["rank_d_floor_excess_risk"] for d in (1, 2, 3, 4)]
    assert np.all(np.diff(floors) < 0)


def test_independent_modalities_have_a_zero_floor():
    # mu_y = 0: y carries nothing about z, PMI ≡ 0, and the zero score is optimal at every D
    spec0 = operator_spectrum(GaussianMixture(1.0, 1.0, 0.0, 1.0), 20)
    assert rank_d_floor(spec0, 1, TAU)["rank_d_floor_excess_risk"] == pytest.approx(0, abs=1e-14)


def test_the_rank_one_floor_equals_a_direct_minimisation_over_rank_one_scores():
    # a second method: BFGS on the raw values of f and g (no whitening, numerical gradients, its
    # own start) over scores s = f gᵀ on a small quadrature of the paper's mixture
    spec = operator_spectrum(GaussianMixture(1.2, 1.0, 1.2, 1.0), 8)
    l_star = infonce_loss(spec, TAU * spec.pmi, TAU)
    n_x, n_y = spec.pmi.shape

    def excess(v):
        return infonce_loss(spec, np.outer(v[:n_x], v[n_x:]), TAU) - l_star

    start = np.concatenate([np.linspace(-1, 1, n_x), np.linspace(-0.5, 0.5, n_y)])
    direct = minimize(excess, start, method="BFGS", options={"gtol": 1e-12, "maxiter": 5000}).fun
    floor = rank_d_floor(spec, 1, TAU)["rank_d_floor_excess_risk"]
    assert direct == pytest.approx(floor, rel=1e-5)
    # and a rank-one score is far from the rank-two optimum on this mixture
    assert rank_d_floor(spec, 2, TAU)["rank_d_floor_excess_risk"] < 0.2 * floor


def test_the_in_place_softmax_agrees_with_scipys():
    """floor._softmax_rows (one exp pass, in place) against scipy's logsumexp and softmax, a second
    implementation, on rows spanning 850 nats (entries far below exp's float64 range underflow to
    a probability of 0 in both)."""
    from scipy.special import logsumexp, softmax

    from crl_approx.numerics.floor import _softmax_rows

    rng = np.random.default_rng(0)
    a = rng.uniform(-800.0, 50.0, size=(7, 300))
    a[3] = 1e3  # a constant row: lse = 1e3 + log 300, a uniform softmax
    p = a.copy()
    lse = _softmax_rows(p)
    np.testing.assert_allclose(lse, logsumexp(a, axis=1), rtol=1e-14)
    np.testing.assert_allclose(p, softmax(a, axis=1), rtol=1e-12, atol=1e-300)
    assert lse[3] == pytest.approx(1e3 + np.log(300), rel=1e-15)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-14)
    w = rng.uniform(0.1, 2.0, size=7)  # the weighted form: w_i times row i's softmax
    q = a.copy()
    assert np.array_equal(_softmax_rows(q, w), lse)
    np.testing.assert_allclose(q, w[:, None] * softmax(a, axis=1), rtol=1e-12, atol=1e-300)
