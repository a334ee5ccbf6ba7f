"""The noise-exponent estimator and the mixture's small-t asymptotics (docs/noise_exponent.md)."""

import math
import re

import numpy as np
import pytest

from crl_approx.analyses.noise import (
    asymptotic_probability,
    asymptotic_slope,
    asymptotic_window_slope,
    estimate,
    estimate_from_counts,
    gmm_asymptotics,
    grid_counts,
    t_grid,
)
from crl_approx.analyses.noise_mc import sample_abs_delta
from crl_approx.models.gmm import GaussianMixture
from crl_approx.models.lcgm import LatentClassModel
from crl_approx.models.rng import stream

PAPER = GaussianMixture(1.2, 1.0, 1.2, 1.0, 0.5)
GRID = t_grid(1e-7, 1.0, 10)
ARGS = {"n_boot": 300, "level": 0.95, "halfwidth": 0.5, "min_count": 10}


def test_grid_contains_the_window_ends():
    g = t_grid(1e-5, 1e-3, 10)
    assert len(g) == 21 and g[0] == pytest.approx(1e-5) and g[-1] == pytest.approx(1e-3)


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_estimator_recovers_a_known_exponent(mu):
    """|Δ| = (U/c)^(1/μ) with U uniform has P(|Δ| ≤ t) = c·t^μ exactly for t ≤ c^(−1/μ)."""
    c = 3.0
    rng = np.random.default_rng(7)
    u = rng.random(2_000_000)
    abs_delta = (u / c) ** (1 / mu)
    top = c ** (-1 / mu)
    window = (top * 1e-2 ** (1 / mu), top * 0.5)  # P from ~1e-2·c… to c/2^μ: well populated
    grid = np.sort(np.concatenate([GRID, window]))
    summary, curve = estimate(abs_delta, grid, window, rng=stream(0, 1), **ARGS)
    assert summary["mu_hat"] == pytest.approx(mu, abs=0.01)
    assert summary["mu_ci_lo"] <= mu <= summary["mu_ci_hi"]
    assert summary["mu_ci_hi"] - summary["mu_ci_lo"] < 0.05
    assert math.exp(summary["log_c_hat"]) == pytest.approx(c, rel=0.05)
    # the local slope is μ everywhere inside the power-law range
    inside = curve[(curve["t"] > window[0] * 3) & (curve["t"] < window[1] / 3)]
    np.testing.assert_allclose(inside["local_slope"], mu, atol=0.03)


def test_counts_pool_like_one_bigger_monte_carlo():
    rng = np.random.default_rng(0)
    a, b = rng.random(10_000), rng.random(10_000)
    pooled = grid_counts(a, GRID) + grid_counts(b, GRID)
    np.testing.assert_array_equal(pooled, grid_counts(np.concatenate([a, b]), GRID))
    s1, _ = estimate_from_counts(pooled, 20_000, GRID, (1e-3, 1e-1), rng=stream(0, 1), **ARGS)
    s2, _ = estimate(np.concatenate([a, b]), GRID, (1e-3, 1e-1), rng=stream(0, 1), **ARGS)
    assert s1["mu_hat"] == s2["mu_hat"]


def test_estimator_refuses_an_empty_window():
    with pytest.raises(ValueError, match="fewer than two grid points"):
        estimate(np.ones(1000), GRID, (1e-5, 1e-3), rng=stream(0, 1), **ARGS)


def test_paper_mixture_constants():
    """c = αβ and C₀ = 1 + C_A + C_B for μ = 1.2, σ = 1 (exploration: 1.520, −0.430)."""
    a = gmm_asymptotics(PAPER)
    assert a["c"] == pytest.approx(1.520, abs=0.001)
    assert a["C0"] == pytest.approx(-0.430, abs=0.001)
    assert a["c"] == pytest.approx(a["alpha"] * a["beta"])
    assert a["C0"] == pytest.approx(1 + a["C_A"] + a["C_B"])
    assert a["quadrature_warnings"] == 0
    # α = 2 f_X(0) / A'(0): closed form for the balanced mixture, A'(0) = ½·2μ/σ²
    f0 = math.exp(-0.5 * 1.2**2) / math.sqrt(2 * math.pi)
    assert a["alpha"] == pytest.approx(2 * f0 / 1.2, rel=1e-10)
    # the window slopes the docs quote: the fit rises as the window moves to smaller t
    w = [
        asymptotic_window_slope(win, a["C0"], 10)
        for win in ((1e-3, 1e-1), (1e-4, 1e-2), (1e-5, 1e-3))
    ]
    np.testing.assert_allclose(w, [0.742, 0.841, 0.884], atol=0.001)
    np.testing.assert_allclose(
        asymptotic_slope([1e-2, 1e-4, 1e-6], a["C0"]), [0.761, 0.886, 0.925], atol=0.001
    )


@pytest.mark.slow
def test_asymptotics_match_monte_carlo_at_small_t():
    """P̂(t) from 4·10⁶ draws against c·t·(log(1/t) + C₀), where both are accurate."""
    a = gmm_asymptotics(PAPER)
    d = sample_abs_delta(PAPER, "marginal", 4_000_000, stream(3, 11))
    for t in (3e-5, 1e-4, 3e-4):
        p = (d <= t).mean()
        sd = math.sqrt(p / d.size)
        assert abs(p - asymptotic_probability(t, a["c"], a["C0"])) < 4 * sd + 0.02 * p, t


@pytest.mark.slow
def test_asymptotics_respond_to_the_mixture():
    """A different (unbalanced, asymmetric) mixture: the formula still tracks Monte Carlo."""
    mix = GaussianMixture(0.8, 1.0, 1.0, 0.9, 0.35)
    a = gmm_asymptotics(mix)
    assert a["quadrature_warnings"] == 0
    d = sample_abs_delta(mix, "marginal", 3_000_000, stream(4, 11))
    for t in (3e-5, 1e-4):
        p = (d <= t).mean()
        assert abs(p / asymptotic_probability(t, a["c"], a["C0"]) - 1) < 0.1, t
    with pytest.raises(ValueError, match="no small-t regime"):
        gmm_asymptotics(GaussianMixture(0.0, 1.0, 1.2, 1.0, 0.5))


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["marginal", "conditional"])
def test_paper_window_reproduces_the_paper_for_both_schemes(scheme):
    d = sample_abs_delta(PAPER, scheme, 2_000_000, stream(0, 11))
    s, _ = estimate(d, GRID, (1e-5, 1e-3), rng=stream(0, 12), **ARGS)
    assert s["mu_hat"] == pytest.approx(0.8789, abs=0.04)


@pytest.mark.slow
def test_lcgm_has_a_heavy_mass_near_zero(default_config):
    """Clean anchor: two candidates of other classes both have tiny r, spread over decades, so
    P(|Δ| ≤ t) is large at small t and its log-log slope is small."""
    d = sample_abs_delta(
        LatentClassModel.from_config(default_config["lcgm"]), "marginal", 200_000, stream(0, 11)
    )
    s, _ = estimate(d, GRID, (1e-5, 1e-3), rng=stream(0, 12), **ARGS)
    assert (d <= 1e-5).mean() > 0.05  # the mixture: ≈ 1.7e-4
    assert 0.1 < s["mu_hat"] < 0.5


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="unknown sampling scheme"):
        sample_abs_delta(PAPER, "joint", 10, stream(0, 1))


def _direct_abs_delta(model, scheme, n, rng):
    """|r(x, y) − r(x, y′)| the slow way, independent of the sampler under test: full d-dimensional
    draws from the model, r = exp(PMI) from its exact log posteriors."""
    x, y, _ = model.sample(n, rng)
    _, y2, _ = model.sample(n, rng)
    if scheme == "marginal":
        _, y, _ = model.sample(n, rng)
    return np.abs(np.exp(model.pmi_paired(x, y)) - np.exp(model.pmi_paired(x, y2)))


LCGM_SMALL = {"K": 4, "d_x": 8, "d_y": 6, "prior": [0.4, 0.3, 0.2, 0.1], "mean_x": 3.0}
LCGM_SMALL |= {"sigma_x": 0.9, "mean_y": 2.0, "sigma_y": 1.1, "design_seed": 5}


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["marginal", "conditional"])
def test_projected_lcgm_sampler_draws_the_same_law_as_full_vectors(scheme):
    """The fast sampler (K normals per point, classes by inverse CDF) against full d-dimensional
    draws with the exact PMI, on an unbalanced prior: a two-sample KS test accepts, and the
    counts at small t agree within binomial error. The same test rejects a model whose target
    spread differs by 5 %, so it can fail."""
    from scipy.stats import ks_2samp

    model = LatentClassModel.from_config(LCGM_SMALL)
    n = 200_000
    fast = sample_abs_delta(model, scheme, n, stream(1, 11), chunk=70_000)
    slow = _direct_abs_delta(model, scheme, n, stream(2, 11))
    assert ks_2samp(fast, slow).pvalue > 1e-3
    for t in (1e-4, 1e-3, 1e-2, 1e-1):
        a, b = (fast <= t).sum(), (slow <= t).sum()
        assert abs(a - b) <= 5 * math.sqrt(a + b + 1), t
    wider = LatentClassModel.from_config(LCGM_SMALL | {"sigma_y": 1.1 * 1.05})
    other = _direct_abs_delta(wider, scheme, n, stream(2, 11))
    assert ks_2samp(fast, other).pvalue < 1e-6


def test_projected_sampler_needs_orthonormal_means():
    model = LatentClassModel.from_config(LCGM_SMALL)
    skewed = LatentClassModel(
        model.prior, model.means_x + 0.3, model.sigma_x, model.means_y, model.sigma_y
    )
    with pytest.raises(ValueError, match="orthonormal"):
        sample_abs_delta(skewed, "marginal", 10, stream(0, 1))


def test_gmm_sampler_matches_full_joint_draws():
    """The mixture's sampler (three normals per triple) against joint draws of the model."""
    from scipy.stats import ks_2samp

    mix = GaussianMixture(1.2, 1.0, 0.8, 1.3, 0.3)
    fast = sample_abs_delta(mix, "conditional", 200_000, stream(1, 11))
    x, y, _ = mix.sample(200_000, stream(2, 11))
    _, y2, _ = mix.sample(200_000, stream(2, 12))
    slow = np.abs(np.exp(mix.pmi_pointwise(x, y)) - np.exp(mix.pmi_pointwise(x, y2)))
    assert ks_2samp(fast, slow).pvalue > 1e-3


def test_the_docs_print_what_the_code_computes():
    """docs/noise_exponent.md's constants, window slopes and pointwise slopes for the paper's
    mixture equal crl_approx's at the digits printed (a stale or hand-typed digit fails)."""
    from conftest import REPO

    text = " ".join((REPO / "docs" / "noise_exponent.md").read_text().replace("−", "-").split())
    a = gmm_asymptotics(PAPER)

    def printed(pattern: str) -> tuple[float, float]:
        token = re.search(pattern, text).group(1)
        decimals = len(token.split(".")[1])
        return float(token), 0.5 * 10.0**-decimals

    for name, key in (("α", "alpha"), ("β", "beta"), ("c", "c"), ("C₀", "C0")):
        value, half = printed(rf"{name} = \**(-?\d+\.\d+)")
        assert abs(value - a[key]) <= half, (name, value, a[key])
    for name, key in (("C_A", "C_A"), ("C_B", "C_B")):
        value, half = printed(rf"{name} = (-?\d+\.\d+)")
        assert abs(value - a[key]) <= half, (name, value, a[key])
    for lo, hi in ((1e-3, 1e-1), (1e-4, 1e-2), (1e-5, 1e-3)):
        pattern = rf"(\d\.\d+)\** on \[{lo:.0e}, {hi:.0e}\]".replace("e-0", "e-")
        value, half = printed(pattern)
        assert abs(value - asymptotic_window_slope((lo, hi), a["C0"], 10)) <= half, (lo, hi)
    slopes = re.search(
        r"pointwise slope is (\d\.\d+) at t = 1e-2, (\d\.\d+) at 1e-4 and (\d\.\d+)", text
    )
    for token, t in zip(slopes.groups(), (1e-2, 1e-4, 1e-6), strict=True):
        assert abs(float(token) - asymptotic_slope(t, a["C0"])) <= 0.5e-3, (t, token)
