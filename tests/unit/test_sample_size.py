"""The sample-size study: the fresh stream, the step-budget trainer, the decomposition, the fits
and the verdicts, each against answers known without the code under test."""

import math
import types

import numpy as np
import pandas as pd
import pytest
import torch

from crl_approx.analyses import sample_size
from crl_approx.models.data import fresh_blocks, gmm_pairs
from crl_approx.models.gmm import GaussianMixture
from crl_approx.models.rng import STREAM_TRAIN, stream
from crl_approx.training import cells
from crl_approx.training.loops import fresh_batches, split_steps

MIX = GaussianMixture(mu_x=1.2, sigma_x=1.0, mu_y=1.2, sigma_y=1.0, prior=0.5)
GMM = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}


def take(gen, k):
    return [next(gen) for _ in range(k)]


# --- the fresh stream ---------------------------------------------------------------------------
def test_fresh_stream_is_deterministic_per_seed_and_apart_from_the_pools():
    a = take(fresh_blocks(MIX, 3, 128, chunk=4), 3)
    b = take(fresh_blocks(MIX, 3, 128, chunk=4), 3)
    other = take(fresh_blocks(MIX, 4, 128, chunk=4), 1)
    for (xa, ya), (xb, yb) in zip(a, b, strict=True):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    assert not np.allclose(a[0][0], other[0][0])
    # the fresh stream is not the pool's stream: its first block is not what the training
    # stream gives for the same number of pairs
    x_pool, _, _ = MIX.sample(4 * 128, stream(3, STREAM_TRAIN))
    assert not np.allclose(a[0][0].ravel(), x_pool)
    # consecutive blocks are new draws, not repeats
    assert not np.allclose(a[0][0], a[1][0])


def test_a_seeds_fresh_batches_do_not_depend_on_the_other_seeds():
    together = take(fresh_batches(MIX, [0, 1, 2], 64, torch.float32, "cpu"), 70)
    alone = take(fresh_batches(MIX, [1], 64, torch.float32, "cpu"), 70)
    for (x3, y3), (x1, y1) in zip(together, alone, strict=True):
        assert x3.shape == (3, 64, 1)
        torch.testing.assert_close(x3[1], x1[0], rtol=0, atol=0)
        torch.testing.assert_close(y3[1], y1[0], rtol=0, atol=0)


def test_the_fresh_stream_is_drawn_from_the_mixture():
    # closed forms for the balanced mixture: E[x] = (2π − 1)μ_x = 0, E[xy] = μ_x μ_y E[z²] = 1.44
    # and Var x = σ² + μ² = 2.44
    blocks = take(fresh_blocks(MIX, 0, 1024, chunk=64), 2)
    x = np.concatenate([b[0].ravel() for b in blocks])
    y = np.concatenate([b[1].ravel() for b in blocks])
    n = len(x)
    assert abs(x.mean()) < 5 * math.sqrt(2.44 / n)
    assert abs(x.var() - 2.44) < 0.05
    xy = x * y
    assert abs(xy.mean() - 1.44) < 5 * xy.std() / math.sqrt(n)


# --- the step budget ----------------------------------------------------------------------------
def test_split_steps_is_even_and_sums_to_the_total():
    assert split_steps(3900, 20) == [195] * 20
    assert split_steps(7, 3) == [3, 2, 2]
    assert sum(split_steps(15600, 20)) == 15600


def _train(**kw):
    return {
        "score": "inner",
        "width": 8,
        "depth": 2,
        "lr": 1e-3,
        "weight_decay": 1e-4,
        "schedule": "cosine",
        "epochs": 2,
        "max_loss": 100.0,
        "batch_size": 64,
    } | kw


def test_a_pool_is_walked_for_exactly_the_budget_across_partial_epochs():
    gmm = GMM | {"n_train": 200, "n_val": 128, "quadrature_nodes": 12}
    pairs = [gmm_pairs(gmm, 0)]  # 3 full batches per epoch: 7 steps end inside the third epoch
    _, metrics, _ = cells.train_gmm(gmm, _train(), 0.5, 1, [0], "samples", 1, pairs, steps=7)
    assert metrics[0]["steps"] == 7
    assert len(metrics[0]["history"]) == 2
    # a different budget is a different run
    _, other, _ = cells.train_gmm(gmm, _train(), 0.5, 1, [0], "samples", 1, pairs, steps=8)
    assert other[0]["mlp_excess_risk"] != metrics[0]["mlp_excess_risk"]


def test_fresh_training_of_a_seed_does_not_depend_on_the_other_seeds():
    gmm = GMM | {"n_val": 128, "quadrature_nodes": 12}
    runs = {}
    for seeds in ([0, 1], [1]):
        val = [gmm_pairs(gmm, s, splits=("val",)) for s in seeds]
        _, metrics, ckpts = cells.train_gmm(
            gmm, _train(), 0.5, 2, seeds, "samples", 1, val, steps=6, fresh=True
        )
        runs[tuple(seeds)] = (metrics[-1], ckpts[-1])
    (m2, c2), (m1, c1) = runs[(0, 1)], runs[(1,)]
    assert m2["seed"] == m1["seed"] == 1
    assert m2["mlp_excess_risk"] == m1["mlp_excess_risk"]
    np.testing.assert_array_equal(c2["f"], c1["f"])


def test_the_study_writes_every_seeds_files_and_its_protocol(tmp_path):
    gmm = GMM | {"n_val": 128, "quadrature_nodes": 12}
    out = types.SimpleNamespace(
        **{
            k: [str(tmp_path / f"{s}.{k}") for s in (0, 1)]
            for k in ("model", "metrics", "checkpoints")
        }
    )
    metrics = cells.run_sample_size(gmm, _train(), 0.5, 1, [0, 1], "fresh", 5, 1, [], out)
    assert [m["pool"] for m in metrics] == ["fresh", "fresh"]
    assert metrics[0]["pairs_seen"] == metrics[0]["distinct_pairs"] == 5 * 64
    assert all((tmp_path / f"{s}.metrics").exists() for s in (0, 1))


# --- decomposition, verdicts, fits --------------------------------------------------------------
def _runs(rows):
    return pd.DataFrame(rows, columns=["D", "seed", "mlp_excess_risk"])


def test_decomposition_splits_each_run_against_its_own_seeds_population_run():
    runs = _runs([(4, 0, 5e-5), (4, 1, 4e-5)])
    population = pd.DataFrame({"D": [4, 4], "seed": [1, 0], "population": [3e-5, 2e-5]})
    floor = pd.DataFrame({"D": [4], "rank_d_floor_excess_risk": [1e-5]})
    parts = sample_size.decompose(runs, population, floor).set_index("seed")
    assert parts.loc[0, "network"] == pytest.approx(1e-5)  # 2e-5 − 1e-5
    assert parts.loc[1, "network"] == pytest.approx(2e-5)
    assert parts.loc[0, "sampling"] == pytest.approx(3e-5)  # 5e-5 − 2e-5, seed 0 with seed 0
    assert parts.loc[1, "sampling"] == pytest.approx(1e-5)


def test_the_reach_verdict_follows_the_tolerance_and_the_seed_sd():
    assert sample_size.reach_verdict(1.05e-5, math.nan, 1e-5) == ("reaches (within 10%)", True)
    assert sample_size.reach_verdict(1.3e-5, 0.4e-5, 1e-5)[1] is True  # within one sd
    label, ok = sample_size.reach_verdict(1.3e-5, 0.1e-5, 1e-5)  # same mean, tighter seeds
    assert not ok and label == "above the paper (1.3×)"
    assert sample_size.reach_verdict(0.5e-5, 0.1e-5, 1e-5) == ("below the paper (0.5×)", False)


def test_power_fit_and_budget_recover_a_known_law():
    x = np.array([100.0, 200.0, 400.0, 800.0])
    a, log_c, used = sample_size.power_fit(x, 3.0 * x**-0.7)
    assert (a, math.exp(log_c), used) == (pytest.approx(0.7), pytest.approx(3.0), 4)
    # 1·S^(−1/2) = 0.01 at S = 10^4; with an offset of 0.005: S^(−1/2) = 0.005 at S = 40 000
    assert sample_size.budget_to_reach(0.5, 0.0, 0.01) == pytest.approx(1e4)
    assert sample_size.budget_to_reach(0.5, 0.0, 0.01, offset=0.005) == pytest.approx(4e4)
    assert sample_size.budget_to_reach(0.5, 0.0, 0.004, offset=0.005) == math.inf
    assert sample_size.budget_to_reach(-0.1, 0.0, 0.01) == math.inf
    # non-positive points are left out, not logged
    assert sample_size.power_fit(x, np.array([1.0, -1.0, 0.25, 0.125]))[2] == 3


def test_the_interval_is_students_t_over_seeds():
    # three seeds at 0.9, 1.0, 1.1: sd 0.1, t(0.975, 2) = 4.303: 1 ± 0.2484
    lo, hi = sample_size.t_interval(1.0, [0.9, 1.0, 1.1], 0.95)
    assert (lo, hi) == (pytest.approx(1 - 0.24843, abs=1e-4), pytest.approx(1 + 0.24843, abs=1e-4))
    assert all(map(math.isnan, sample_size.t_interval(1.0, [0.9], 0.95)))


def _synthetic_parts(exponent, noise=0.1):
    """Pools at 1e4..1e6 whose sampling part is 10·n^(−exponent) times a noise factor per run
    (3 seeds)."""
    rows = []
    rng = np.random.default_rng(1)
    for seed in (0, 1, 2):
        for n in (1e4, 1e5, 1e6):
            k = 10.0 * math.exp(noise * rng.standard_normal())
            rows.append(
                {
                    "D": 4,
                    "seed": seed,
                    "protocol": f"n={int(n)}",
                    "pool_size": n,
                    "budget_multiplier": 1,
                    "steps": 100,
                    "lr": 1e-3,
                    "sampling": k * n**-exponent,
                    "mlp_excess_risk": 1e-5 + k * n**-exponent,
                    "population": 1e-5,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("exponent", "verdict"), [(1.0, "consistent with 1/n"), (0.5, "slower than 1/n")]
)
def test_the_fitted_exponent_and_its_theory_verdict(exponent, verdict):
    paper = {"table1": [{"D": 4, "mlp_excess_risk": 1.877e-5}]}
    fits = sample_size.fit_rows(_synthetic_parts(exponent), paper, 0.95, [], 100, 1e-3)
    row = fits.iloc[0]
    assert row["fit"] == "sampling vs pool size"
    assert row["exponent"] == pytest.approx(exponent, abs=0.02)
    assert row["exponent_lo"] <= exponent <= row["exponent_hi"]
    assert row["theory_verdict"] == verdict


def test_the_budget_axis_extrapolates_with_and_without_the_population_level():
    # fresh excess = population level 1e-5 + k_seed / steps (sampling exactly ∝ 1/steps): the
    # sampling fit has exponent 1, and the paper's 2e-5 is reached where k/S = 1e-5, i.e. at
    # S = k_mean / 1e-5 steps, in multiples of the 3900-step budget
    ks = {0: 0.35, 1: 0.39, 2: 0.43}
    rows = [
        {
            "D": 8,
            "seed": seed,
            "protocol": "fresh",
            "pool_size": np.nan,
            "budget_multiplier": m,
            "steps": 3900 * m,
            "lr": 1e-3,
            "population": 1e-5,
            "sampling": k / (3900 * m),
            "mlp_excess_risk": 1e-5 + k / (3900 * m),
        }
        for seed, k in ks.items()
        for m in (1, 2, 4)
    ]
    paper = {"table1": [{"D": 8, "mlp_excess_risk": 2e-5}]}
    fits = sample_size.fit_rows(pd.DataFrame(rows), paper, 0.95, [8], 3900, 1e-3).set_index("fit")
    sampling = fits.loc["sampling vs steps (fresh)"]
    assert sampling["exponent"] == pytest.approx(1.0)
    assert sampling["budget_to_paper"] == pytest.approx(0.39 / 1e-5 / 3900)
    # the pure power law of the total excess flattens towards the level: a shallower exponent
    total = fits.loc["excess vs steps (fresh)"]
    assert total["exponent"] < 1.0
    assert math.isfinite(total["budget_to_paper"])
    # a paper value below the population level is never reached with the level as asymptote
    below = {"table1": [{"D": 8, "mlp_excess_risk": 0.5e-5}]}
    fits = sample_size.fit_rows(pd.DataFrame(rows), below, 0.95, [8], 3900, 1e-3).set_index("fit")
    assert fits.loc["sampling vs steps (fresh)", "budget_to_paper"] == math.inf
