"""Measured calibration: the retrieval error by quadrature, its Bayes optimum, the exponent fit."""

import itertools

import numpy as np
import pytest

from crl_approx.analyses.calibration import (
    calibration_table,
    excess_pair,
    fit_exponent,
    retrieval_error,
    truncation_points,
)
from crl_approx.models.gmm import GaussianMixture
from crl_approx.models.rng import stream
from crl_approx.numerics.spectrum import infonce_loss, operator_spectrum

TAU = 0.5


@pytest.fixture(scope="module")
def spec():
    return operator_spectrum(GaussianMixture(1.2, 1.0, 1.2, 1.0, 0.5), 60)


@pytest.fixture(scope="module")
def stars(spec):
    return infonce_loss(spec, TAU * spec.pmi, TAU), retrieval_error(spec, spec.pmi)


def brute_force(spec, score):
    """The definition, with an explicit triple loop on a small grid (ties count half)."""
    q, r = spec.quad, np.exp(spec.pmi)
    total = 0.0
    for i, j, k in itertools.product(range(score.shape[0]), repeat=3):
        s, s2 = score[i, j], score[i, k]
        wrong = 1.0 if s2 > s else (0.5 if s2 == s else 0.0)
        total += q.wx[i] * q.wy[j] * r[i, j] * q.wy[k] * wrong
    return total


def test_sorting_implementation_matches_the_definition_with_ties():
    small = operator_spectrum(GaussianMixture(1.2, 1.0, 1.2, 1.0, 0.5), 5)  # 10 nodes
    rng = np.random.default_rng(0)
    scores = [
        small.pmi,
        rng.standard_normal(small.pmi.shape),
        np.sign(small.pmi),  # two values: ties everywhere (a D = 1 cosine score)
        np.zeros_like(small.pmi),
    ]
    for score in scores:
        assert retrieval_error(small, score) == pytest.approx(brute_force(small, score), abs=1e-14)
    # a constant score ranks at random: every wrong order counts half
    assert retrieval_error(small, np.zeros_like(small.pmi)) == pytest.approx(0.5)


def test_r_itself_is_the_bayes_optimum(spec, stars):
    """E(r) = E(PMI) = E* and no other score does better (perturbations, truncations, noise)."""
    _, e_star = stars
    assert retrieval_error(spec, np.exp(spec.pmi)) == pytest.approx(e_star, abs=1e-15)
    assert 0 < e_star < 0.5
    rng = np.random.default_rng(1)
    x, y = spec.quad.x[:, None], spec.quad.y[None, :]
    others = [spec.truncated_pmi(d) for d in (2, 3, 5)]
    others += [spec.pmi + lam * np.sin(3 * x) * np.cos(y) for lam in (1e-3, 1e-2, 0.3)]
    others += [spec.pmi + 0.05 * rng.standard_normal(spec.pmi.shape) for _ in range(3)]
    for score in others:
        assert retrieval_error(spec, score) >= e_star - 1e-15


def test_row_corruption_family_has_exponent_one(spec, stars):
    """Both excesses are sums over the query nodes x. Reverse the ranking of single rows, keep the
    rows whose retrieval/contrastive ratio is within 3 % of the smallest (the tail rows, whose
    ratio tends to a constant), and corrupt growing nested sets of them: both excesses then grow
    together (retrieval = ratio × contrastive up to 3 %) over orders of magnitude, so the fitted
    exponent is 1 up to the band's width."""
    l_star, e_star = stars

    def corrupted(rows):
        score = TAU * spec.pmi.copy()
        score[rows] = -score[rows]
        return excess_pair(spec, score, TAU, l_star, e_star)

    n = spec.pmi.shape[0]
    single = np.array([corrupted([i]) for i in range(n)])
    ok = (single[:, 0] > 1e-14) & (single[:, 1] > 1e-14)
    ratio = np.where(ok, single[:, 1] / np.where(ok, single[:, 0], 1), np.nan)
    band = np.flatnonzero(ratio < 1.03 * np.nanmin(ratio))
    band = band[np.argsort(single[band, 0])]  # smallest contribution first
    assert band.size >= 6
    points = np.array([corrupted(band[: k + 1]) for k in range(band.size)])
    # additivity over rows, which the construction relies on
    np.testing.assert_allclose(points[-1], single[band].sum(0), rtol=1e-9)
    assert points[-1, 0] / points[0, 0] > 100  # the family spans orders of magnitude
    fit = fit_exponent(points[:, 0], points[:, 1], 500, 0.95, stream(0, 1))
    assert fit["exponent"] == pytest.approx(1.0, abs=0.01)
    assert fit["exponent_ci_lo"] <= 1.0 <= fit["exponent_ci_hi"]


def test_fit_exponent_on_exact_power_laws():
    c = np.geomspace(1e-8, 1e-2, 12)
    for kappa in (0.5, 2 / 3, 1.0):
        fit = fit_exponent(c, 0.3 * c**kappa, 200, 0.95, stream(0, 1))
        assert fit["exponent"] == pytest.approx(kappa, abs=1e-10)
        assert fit["exponent_ci_hi"] - fit["exponent_ci_lo"] < 1e-8
    with pytest.raises(ValueError, match="too few"):
        fit_exponent([1e-3, 1e-4], [1e-2, 1e-3], 10, 0.95, stream(0, 1))


def test_the_bootstrap_resamples_runs_not_checkpoints():
    # 6 runs, each of 20 identical checkpoints: a run's copies add no information, so the
    # run-level interval must equal that of the 6 distinct points, while resampling single
    # checkpoints would (wrongly) shrink it by about √20
    rng = np.random.default_rng(5)
    c = np.geomspace(1e-6, 1e-2, 6)
    r = 0.3 * c**0.6 * np.exp(0.3 * rng.standard_normal(6))
    one = fit_exponent(c, r, 2000, 0.95, stream(0, 1), clusters=np.arange(6))
    copies = np.repeat(np.arange(6), 20)
    runs = fit_exponent(c[copies], r[copies], 2000, 0.95, stream(0, 1), clusters=copies)
    points = fit_exponent(c[copies], r[copies], 2000, 0.95, stream(0, 1))
    assert runs["exponent"] == pytest.approx(one["exponent"], rel=1e-10)
    assert runs["exponent_ci_lo"] == pytest.approx(one["exponent_ci_lo"], rel=1e-9)
    assert runs["exponent_ci_hi"] == pytest.approx(one["exponent_ci_hi"], rel=1e-9)
    width = lambda f: f["exponent_ci_hi"] - f["exponent_ci_lo"]  # noqa: E731
    assert width(points) < 0.5 * width(runs)
    assert runs["n_clusters"] == 6 and points["n_clusters"] == 120


def test_truncations_and_the_table(spec, stars):
    l_star, e_star = stars
    pts = truncation_points(spec, TAU, l_star, e_star, 12)
    import pandas as pd

    frame = pd.DataFrame(pts)
    assert (frame["contrastive_excess"] > 0).all()
    # the rank-1 truncation ranks exactly like r on the binary mixture (ψ₁φ₁ is monotone in the
    # sufficient statistic): zero retrieval excess, excluded from the fit and counted
    assert frame.loc[frame["D"] == 1, "retrieval_excess"].abs().max() < 1e-12
    table = calibration_table(
        frame, {"min_excess": 1e-10, "n_bootstrap": 100, "ci_level": 0.95}, 0.8789, 0
    ).set_index("group")
    assert table.loc["truncations", "n_excluded"] >= 1
    # μ = 0 makes the noise condition vacuous: its bound must collapse onto the distribution-free
    # one (rate 1/2, the same constant); a positive μ gives a faster rate and another constant
    vacuous = calibration_table(
        frame, {"min_excess": 1e-10, "n_bootstrap": 100, "ci_level": 0.95}, 0.0, 0
    ).set_index("group")
    assert vacuous.loc["truncations", "noise_rate"] == 0.5
    assert vacuous.loc["truncations", "max_ratio_to_noise_bound"] == pytest.approx(
        vacuous.loc["truncations", "max_ratio_to_bound"], rel=1e-12
    )
    assert table.loc["truncations", "noise_rate"] > 0.5
    assert table.loc["truncations", "max_ratio_to_noise_bound"] != pytest.approx(
        table.loc["truncations", "max_ratio_to_bound"]
    )
    assert np.isfinite(table.loc["truncations", "exponent"])
