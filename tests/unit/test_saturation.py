"""The noise-aware saturation rule (numerics.saturation) on crafted curves whose answer is known by
construction: 3 seeds, seed noise drawn from a fixed generator, paired over seeds.

Mutations these tests catch (each tried once and seen to fail):
* flat / flat-then-drifting: today's elbow (analyses.probes.elbow on the seed mean) returns None
  for both (its band is relative to the curve's own range: noise sets it);
* step at K with a slow tail: dropping the relative tolerance (tolerance=0) moves it to the tail;
* monotone: returning D* without the "last D ⇒ not saturated" branch saturates it at D_max;
* noisy step: dropping the t half-width (comparing means only) resolves a step the seeds cannot.
"""

import math

import numpy as np
import pytest

from crl_approx.numerics.saturation import (
    NOT_SATURATED,
    SATURATED,
    UNRESOLVED,
    consistent,
    from_runs,
    saturation,
)

DIMS = [1, 2, 4, 6, 8, 10, 12, 16]
K = 8


def seeds(mean, rel_sd, seed=0, n=3):
    """n seed values per D: mean·(1 + rel_sd·ε), ε standard normal (a fixed generator)."""
    rng = np.random.default_rng(seed)
    m = np.asarray(mean, float)
    return m[:, None] * (1 + rel_sd * rng.standard_normal((m.size, n)))


def step(base=0.01):
    """An excess curve (lower is better): 0.5·(2 − D/K) below K, ``base`` from D = K on."""
    d = np.asarray(DIMS, float)
    return np.where(d < K, 0.5 * (2 - d / K), base)


def test_flat_curve_saturates_at_its_first_d():
    values = seeds(np.full(len(DIMS), 0.02), 0.05, seed=1)
    r = saturation(DIMS, values, increasing=False)
    assert (r.status, r.at, r.label) == (SATURATED, 1, "≤ 1")


def test_flat_then_drifting_up_within_noise_saturates_at_its_first_d():
    # an excess that rises 1 % per D step (worse), with 5 % seed noise: the first D is best
    mean = 0.0236 * (1 + 0.01 * np.arange(len(DIMS)))
    r = saturation(DIMS, seeds(mean, 0.05, seed=2), increasing=False)
    assert (r.status, r.at) == (SATURATED, 1)


def test_step_at_k():
    r = saturation(DIMS, seeds(step(), 0.03, seed=3), increasing=False)
    assert (r.status, r.at, r.label) == (SATURATED, K, str(K))
    assert consistent(r, {K - 1, K}) == "holds"
    assert consistent(r, {1, 2}) == "fails"


def test_step_at_k_with_a_slow_resolvable_tail():
    # past K the excess keeps falling 1.5 % per D step (8 % from K to 16, like Experiment R's
    # K = 10 at 600 steps), resolvable with 0.2 % seed noise but inside the 10 % tolerance
    mean = step()
    tail = np.array([max(0, i - DIMS.index(K)) for i in range(len(DIMS))])
    mean = mean * (1 - 0.015 * tail)
    values = seeds(mean, 0.002, seed=4)
    r = saturation(DIMS, values, increasing=False)
    assert (r.status, r.at) == (SATURATED, K)
    # the tail is resolvable: without the tolerance the rule follows it to the end of the sweep
    assert saturation(DIMS, values, increasing=False, tolerance=0.0).status == NOT_SATURATED


def test_noisy_step():
    # resolvable noise (5 %): the step is found; noise of 60 % per seed: the seeds cannot tell
    assert saturation(DIMS, seeds(step(), 0.05, seed=5), increasing=False).at == K
    r = saturation(DIMS, seeds(step(), 0.6, seed=6), increasing=False)
    assert r.status == UNRESOLVED
    assert consistent(r, {K - 1, K}) == "unresolved"


def test_monotone_without_saturation_does_not_saturate():
    # R² rising by a factor 1.3 per D step (small noise): no plateau in the sweep
    mean = 0.05 * 1.3 ** np.arange(len(DIMS))
    r = saturation(DIMS, seeds(mean, 0.01, seed=7), increasing=True)
    assert r.status == NOT_SATURATED and r.at is None and math.isinf(r.hi)
    assert consistent(r, {K - 1, K}) == "fails"
    assert consistent(r, (11, math.inf)) == "holds"


def test_increasing_and_decreasing_are_mirror_images():
    values = seeds(step(), 0.03, seed=3)
    down = saturation(DIMS, values, increasing=False)
    up = saturation(DIMS, 1.0 - values, increasing=True)  # 1 − excess rises to its plateau
    assert down.at == up.at == K


def test_one_seed_is_unresolved():
    r = saturation(DIMS, seeds(step(), 0.0, n=1), increasing=False)
    assert r.status == UNRESOLVED


def test_from_runs_pivots_a_long_table():
    import pandas as pd

    values = seeds(step(), 0.03, seed=3)
    runs = pd.DataFrame(
        [{"D": d, "seed": s, "x": values[i, s]} for i, d in enumerate(DIMS) for s in range(3)]
    )
    assert from_runs(runs, "x", increasing=False).at == K


@pytest.mark.parametrize(
    ("lo", "hi", "predicted", "verdict"),
    [(1, 1, {1, 2}, "holds"), (1, 4, {4, 5}, "unresolved"), (1, 2, {4, 5}, "fails")],
)
def test_consistent_reads_the_allowed_range(lo, hi, predicted, verdict):
    from crl_approx.numerics.saturation import Saturation

    assert consistent(Saturation(SATURATED, hi, lo, hi, "", ""), predicted) == verdict
