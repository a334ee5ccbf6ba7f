"""The closed-form Gaussian mixture."""

import numpy as np
import pytest

from crl_approx.models.gmm import GaussianMixture

MIXES = [
    GaussianMixture(1.2, 1.0, 1.2, 1.0),
    GaussianMixture(0.7, 0.8, 2.0, 1.5, 0.3),
    GaussianMixture(5.0, 0.3, -4.0, 0.5, 0.2),
]


@pytest.mark.parametrize("mix", MIXES)
def test_pmi_equals_log_density_ratio_far_into_the_tails(mix):
    x = np.linspace(-40, 40, 401)
    y = np.linspace(-35, 35, 351)
    xx, yy = np.meshgrid(x, y, indexing="ij")
    direct = mix.log_pxy(xx, yy) - mix.log_px(xx) - mix.log_py(yy)
    pmi = mix.pmi(x, y)
    assert np.isfinite(pmi).all()
    np.testing.assert_allclose(pmi, direct, atol=1e-9 * max(1.0, np.abs(direct).max()))
    np.testing.assert_allclose(mix.pmi_pointwise(xx, yy), pmi, rtol=0, atol=0)


def test_pmi_is_exactly_zero_when_a_modality_carries_no_signal():
    x = np.linspace(-30, 30, 61)
    assert np.all(GaussianMixture(0.0, 1.0, 1.2, 1.0, 0.3).pmi(x, x) == 0.0)
    assert np.all(GaussianMixture(1.2, 1.0, 0.0, 1.0).pmi(x, x) == 0.0)


def test_balanced_symmetric_pmi_has_the_rank_two_ratio():
    mix = GaussianMixture(1.2, 1.0, 1.2, 1.0)
    x = np.linspace(-3, 3, 7)
    r = np.exp(mix.pmi(x, x))
    t = np.tanh(mix.llr_x(x) / 2)
    np.testing.assert_allclose(r, 1 + np.outer(t, t), rtol=1e-13)


def test_samples_follow_the_model():
    mix = GaussianMixture(0.7, 0.8, 2.0, 1.5, 0.3)
    x, y, z = mix.sample(200_000, np.random.default_rng(1))
    assert np.mean(z > 0) == pytest.approx(0.3, abs=0.005)
    assert np.mean(x[z > 0]) == pytest.approx(0.7, abs=0.01)
    assert np.std(y[z < 0]) == pytest.approx(1.5, abs=0.01)
    # the same seed gives the same draws, another seed others
    x2, _, _ = mix.sample(200_000, np.random.default_rng(1))
    np.testing.assert_array_equal(x, x2)
    x3, _, _ = mix.sample(200_000, np.random.default_rng(2))
    assert not np.array_equal(x, x3)
