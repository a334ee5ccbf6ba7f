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


def _small_problem(seed=1, nx=6, ny=7, d=2):
    rng = np.random.default_rng(seed)
    wx, wy = rng.dirichlet(np.ones(nx)), rng.dirichlet(np.ones(ny))
    joint = wx[:, None] * wy[None, :] * np.exp(rng.normal(0, 0.5, size=(nx, ny)))
    f, g = rng.normal(size=(nx, d)), rng.normal(size=(ny, d))
    return f, g, wx, np.log(wy), joint / joint.sum(), TAU


def test_the_loss_gradients_match_central_differences():
    """floor._loss_and_grads, the L-BFGS objective's gradients, against central differences of
    the loss (a second method), on a small random problem; and its loss is the row losses' sum."""
    from crl_approx.numerics.floor import _loss_and_grads, _row_loss

    f, g, wx, log_wy, joint, tau = _small_problem()
    loss, gf, gg = _loss_and_grads(f, g, wx, log_wy, joint, tau)
    assert loss == pytest.approx(_row_loss(f, g, wx, log_wy, joint, tau).sum(), rel=1e-13)
    h = 1e-6
    for x, grad, which in ((f, gf, 0), (g, gg, 1)):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[idx] = h
            args = [(f + e, g), (f - e, g)] if which == 0 else [(f, g + e), (f, g - e)]
            up, down = (_loss_and_grads(a, b, wx, log_wy, joint, tau)[0] for a, b in args)
            num[idx] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-9)


def test_the_newton_line_search_on_the_rows_still_halving_equals_the_all_rows_search():
    """newton_f re-evaluates only the rows whose trial step is still worse; the search it replaced
    (every row re-evaluated at every halving), written out here with the same row loss and Newton
    step, must give the same rows: each row's search is independent of the others'. The problem
    is set far from its optimum so that rows halve their steps a different number of times."""
    from crl_approx.numerics.floor import _row_loss, newton_f, newton_f_step

    halvings = set()

    def all_rows(f, g, wx, log_wy, joint, tau, steps=20):
        for _ in range(steps):
            step = newton_f_step(f, g, wx, log_wy, joint, tau)
            l0 = _row_loss(f, g, wx, log_wy, joint, tau)
            t = np.ones(f.shape[0])
            for _ in range(40):
                worse = _row_loss(f - t[:, None] * step, g, wx, log_wy, joint, tau) > l0
                if not worse.any():
                    break
                t[worse] *= 0.5
            halvings.add(tuple(np.unique(t)))
            new = f - t[:, None] * step
            l1 = _row_loss(new, g, wx, log_wy, joint, tau)
            f = np.where((l1 <= l0)[:, None], new, f)
            if np.all(l0 - l1 <= 1e-17):
                break
        return f

    f, g, wx, log_wy, joint, tau = _small_problem(seed=2, nx=9, ny=8, d=3)
    f = 6.0 * f
    ours, theirs = newton_f(f, g, wx, log_wy, joint, tau), all_rows(f, g, wx, log_wy, joint, tau)
    assert any(len(ts) > 1 for ts in halvings)  # some step halved some rows more than others
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-15)
    assert not np.allclose(ours, f)  # the search moved the rows
