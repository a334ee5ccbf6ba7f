"""The best achievable rank-D InfoNCE excess."""

import numpy as np
import pytest

from crl_approx.gmm import GaussianMixture
from crl_approx.rank_floor import rank_d_floor
from crl_approx.spectrum import operator_spectrum

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


def test_floor_is_zero_for_a_rank_one_log_ratio():
    # an asymmetric-prior-free mixture with tiny signal: PMI ≈ rank 1, so D = 1 is almost exact;
    # but a model with a rank-2 log ratio would need D = 2. Use mu_y = 0: PMI ≡ 0, floor 0 at D=1.
    spec0 = operator_spectrum(GaussianMixture(1.0, 1.0, 0.0, 1.0), 20)
    assert rank_d_floor(spec0, 1, TAU)["rank_d_floor_excess_risk"] == pytest.approx(0, abs=1e-14)
