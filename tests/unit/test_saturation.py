"""The noise-aware saturation rule (numerics.saturation) on crafted curves whose answer is known by
construction: 3 seeds, seed noise drawn from a fixed generator, paired over seeds.

Mutations these tests catch (each tried once and seen to fail):
* flat / flat-then-drifting: today's elbow (analyses.probes.elbow on the seed mean) returns None
  for both (its band is relative to the curve's own range: noise sets it);
* step at K with a slow tail: dropping the relative tolerance (tolerance=0) moves it to the tail;
* monotone: returning D* without the "last D ⇒ not saturated" branch saturates it at D_max;
* noisy step: dropping the t half-width (comparing means only) resolves a step the seeds cannot;
* the stated level: reading the t quantile at 0.975 (a two-sided 95 % interval's lower end, the
  first version's mislabelled "95 %") leaves unbeaten a D the one-sided 5 % test beats;
* one spurious comparison among many Ds: Holm without its division by m (every comparison at 5 %)
  lets it set the saturation point;
* a slow monotone curve (5 % per step, each step within the noise) over a long sweep: without the
  trend check (``trend=False``, the first version) the point lands at the sweep's end, a finite
  range set by where the sweep stops.
"""

import math

import numpy as np
import pytest

from crl_approx.numerics.saturation import (
    ALPHA,
    NOT_SATURATED,
    SATURATED,
    UNRESOLVED,
    consistent,
    from_runs,
    improvement,
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


@pytest.mark.parametrize(
    ("lo", "hi", "verdict"),
    [
        (14, 20, "fails"),
        (9, 10, "holds"),
        (8, 9, "unresolved"),
        (1, math.inf, "unresolved"),
        (5, 7, "unresolved"),
    ],
)
def test_an_unresolved_range_is_read_like_any_other(lo, hi, verdict):
    """The seeds leave the saturation point in [D*, D_m]: D* is a bound (every smaller D is
    resolvably beaten), D_m only where the means put it. Wholly above the prediction {9, 10} is a
    miss, wholly inside holds, wholly below is unresolved (the point may lie above D_m). Mutations
    caught (seen failing): "unresolved" for every unresolved result (the first two); a range below
    the prediction read as a miss (the last)."""
    from crl_approx.numerics.saturation import Saturation

    r = Saturation(UNRESOLVED, lo, lo, hi, f"unresolved ({lo}–{hi})", "")
    assert consistent(r, {9, 10}) == verdict


def test_the_stated_level_is_a_one_sided_five_percent_test():
    """Two Ds, a paired improvement whose t statistic over the tolerance is 3.5 with 2 degrees of
    freedom: between the one-sided 5 % quantile (2.92) and the 0.975 quantile (4.30). One
    comparison, no family: the stated one-sided 5 % test resolves it."""
    from scipy import stats

    base, sd = np.array([1.0, 1.02, 0.98]), 0.05
    gain = 0.1 + 3.5 * sd / math.sqrt(3)  # tolerance 0.1 = 10 % of the mean at D = 1
    assert stats.t.ppf(0.95, 2) < 3.5 < stats.t.ppf(0.975, 2)
    values = np.stack([base, base + gain + np.array([-sd, 0.0, sd])])
    _, p = improvement(values[0], values[1], 0.1)
    assert p == pytest.approx(stats.t.sf(3.5, 2)) and p <= ALPHA
    # the comparison alone decides (the trend check, continuing the two points, would too)
    r = saturation([1, 2], values, increasing=True, trend=False)
    assert (r.status, r.label) == (NOT_SATURATED, "≥ 2")
    assert "one-sided" in r.reason and "5%" in r.reason


def test_one_spurious_comparison_among_many_ds_does_not_set_the_point():
    """Twelve Ds, flat per seed, except D = 6 whose paired improvement has t = 5 over the
    tolerance (one-sided p 0.019 at 2 degrees of freedom): resolvable alone, not among the 11
    comparisons of D = 1 (Holm: p ≤ 0.05/11 needed). The point stays at the first D, with the seeds
    unable to exclude D = 6 (it beats D = 1 by its mean)."""
    base, sd = np.array([1.0, 1.02, 0.98]), 0.05
    dims = list(range(1, 13))
    values = np.tile(base, (len(dims), 1))
    values[5] = base + 0.1 + 5 * sd / math.sqrt(3) + np.array([-sd, 0.0, sd])
    r = saturation(dims, values, increasing=True)
    assert r.at == 1 and r.lo == 1
    assert r.label == "unresolved (1–6)"
    assert consistent(r, {1}) == "unresolved"  # not decided against D = 1 by one comparison


@pytest.mark.parametrize("noise_seed", [0, 1, 2])
def test_a_slow_monotone_curve_over_a_long_sweep_does_not_saturate(noise_seed):
    """An excess falling 5 % per D step over D = 1…20 with 2 % seed noise (a paired step has t ≈ 3
    over 3 seeds: each step within the noise). Every D is compared with every larger D, so the
    cumulative fall keeps the point at the sweep's last steps: no plateau near K, and the verdict
    against {K − 1, K} fails. The rule's stated resolution (module docstring): a fall of less than
    the tolerance per step of the sweep's last spacing is not seen past the sweep's end, so the
    point lies within its last three Ds, never earlier. Mutation caught (seen failing): comparing
    a D only with its neighbour (the point then lands at D = 1 or 2)."""
    dims = list(range(1, 21))
    values = seeds(0.1 * 0.95 ** np.arange(len(dims)), 0.02, seed=noise_seed)
    r = saturation(dims, values, increasing=False)
    assert r.lo >= 16
    assert consistent(r, {K - 1, K}) == "fails"


def test_an_unresolved_step_before_a_flat_tail_is_not_a_trend():
    """A measured curve (Experiment R, K = 10, held-out excess at 1600 steps, 3 seeds): a step from
    D = 8 to 9 that the seeds do not resolve under Holm, then a tail flat within the 10 %
    tolerance from D = 9 on (no later mean beats D = 9's by 10 %). The plateau is somewhere in
    8–9, never "still moving". Mutation caught (seen failing): the trend line fitted from D*
    instead of D_m, which tilts it with the unresolved step and reads "≥ 20"."""
    dims = [4, 8, 9, 10, 11, 14, 20]
    per_seed = [
        [0.1125, 0.1033, 0.1065],
        [0.0649, 0.0750, 0.0698],
        [0.0629, 0.0650, 0.0612],
        [0.0548, 0.0598, 0.0603],
        [0.0551, 0.0632, 0.0604],
        [0.0602, 0.0686, 0.0678],
        [0.0566, 0.0646, 0.0583],
    ]
    means = np.mean(per_seed, axis=1)
    assert all(means[2] - m <= 0.1 * means[2] for m in means[3:])  # flat from D = 9, by hand
    r = saturation(dims, per_seed, increasing=False)
    assert (r.status, r.lo, r.hi) == (UNRESOLVED, 8, 9), r


def test_a_sub_tolerance_step_after_d_m_is_not_counted_again_by_the_trend():
    """A curve 9.5 % above its plateau at D = 9 (below the 10 % tolerance, so D_m = 9), flat from
    D = 10, tight seeds (0.5 %). The line over D ≥ 9 is tilted by the step, but what it adds past
    D = 20 is small: the plateau is at 9 or 10, never "≥ 20". Mutation caught (seen failing): the
    trend's gain measured from q(D_m) (counting the 9.5 % inside the sweep again: "≥ 20")."""
    dims = [4, 8, 9, 10, 11, 14, 20]
    mean = np.array([0.11, 0.07, 0.0657, 0.06, 0.06, 0.06, 0.06])
    r = saturation(dims, seeds(mean, 0.005, seed=3), increasing=False)
    assert r.status != NOT_SATURATED and r.hi <= 10, r


@pytest.mark.parametrize("drift", [0.0, 0.01])
def test_the_elbow_rule_misreads_what_the_saturation_rule_reads(drift):
    """The flat and the flat-then-drifting curves above, through the pre-registered elbow rule
    (Experiment 3's, on the seed means, fraction 0.95, log scale): it has no noise floor, so its
    band comes from the noise and its answer is not "flat from the first D" (a drifting curve has
    no elbow at all). The saturation rule reads both as saturated at the first D. Substituting the
    elbow for the rule (the mutation issue 26 names) fails these tests."""
    from crl_approx.analyses.probes import elbow

    mean = 0.0236 * (1 + drift * np.arange(len(DIMS)))
    values = seeds(mean, 0.05, seed=2 if drift else 1)
    assert elbow(DIMS, values.mean(axis=1), 0.95, increasing=False, log=True) != DIMS[0]
    assert saturation(DIMS, values, increasing=False).at == DIMS[0]
