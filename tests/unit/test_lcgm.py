"""The latent-class model: exact posteriors and PMI, the rank-K structure, probes, the elbow, and
the K = 4 sweep whose elbow must land on 4 without being told K."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from crl_approx.analyses.probes import (
    canonical_correlations,
    elbow,
    features,
    probe_metrics,
    probe_r2,
)
from crl_approx.models.data import lcgm_pairs
from crl_approx.models.lcgm import (
    LatentClassModel,
    design_summary,
    gap_rank,
    orthonormal_directions,
)
from crl_approx.models.rng import stream
from crl_approx.training.cells import train_lcgm

BASE = {
    "prior": "uniform",
    "mean_x": 6.0,
    "sigma_x": 0.9,
    "mean_y": 3.5,
    "sigma_y": 1.0,
    "design_seed": 2610,
}
PAPER = dict(BASE, K=8, d_x=16, d_y=16)
SMALL = dict(
    BASE,
    K=4,
    d_x=8,
    d_y=8,
    n_train=20000,
    n_val=1024,
    n_probe_fit=4096,
    n_probe_test=4096,
    n_checkpoint=16,
)


def test_directions_are_orthonormal_and_reproducible():
    q = orthonormal_directions(16, 8, stream(3, 101))
    np.testing.assert_allclose(q @ q.T, np.eye(8), atol=1e-12)
    np.testing.assert_array_equal(q, orthonormal_directions(16, 8, stream(3, 101)))
    with pytest.raises(ValueError, match="do not fit"):
        orthonormal_directions(4, 5, stream(0, 1))


def test_posteriors_and_pmi_match_direct_densities():
    """Bayes' rule with scipy's Gaussian densities, and PMI = log p(x,y) − log p(x) − log p(y)."""
    m = LatentClassModel.from_config(dict(BASE, K=3, d_x=4, d_y=3, prior=[0.5, 0.3, 0.2]))
    x, y, _ = m.sample(50, stream(0, 7))
    lx = np.stack([multivariate_normal(m.means_x[k], m.sigma_x**2).logpdf(x) for k in range(3)], 1)
    ly = np.stack([multivariate_normal(m.means_y[k], m.sigma_y**2).logpdf(y) for k in range(3)], 1)
    lp = np.log(m.prior)
    post_x = lx + lp - logsumexp(lx + lp, axis=1, keepdims=True)
    np.testing.assert_allclose(m.log_post_x(x), post_x, atol=1e-10)
    # all pairs (i, j): log Σ_k π_k p(x_i|k) p(y_j|k) − log p(x_i) − log p(y_j)
    joint = logsumexp(lx[:, None, :] + ly[None, :, :] + lp, axis=2)
    direct = joint - logsumexp(lx + lp, axis=1)[:, None] - logsumexp(ly + lp, axis=1)[None, :]
    np.testing.assert_allclose(m.pmi(x, y), direct, atol=1e-9)
    np.testing.assert_allclose(m.pmi_paired(x, y), np.diag(direct), atol=1e-9)


def test_pmi_survives_far_points_without_underflow():
    m = LatentClassModel.from_config(PAPER)
    x, y, _ = m.sample(6, stream(0, 1))
    x, y = 40 * x, 40 * y  # log posteriors of order −10^4: the matrix product underflows
    ref = logsumexp(m.log_post_x(x)[:, None, :] + m.log_ratio_y(y)[None, :, :], axis=2)
    got = m.pmi(x, y)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9)


def test_paper_design_is_clean_anchor_noisy_target_and_rank_k():
    """The design the config documents: anchor effectively clean, Bayes accuracy from y ≈ 0.963,
    density-ratio kernel of rank exactly K, the x-centred PMI kernel with its gap after K."""
    m = LatentClassModel.from_config(PAPER)
    x, y, z = m.sample(20000, stream(0, 103))
    s = design_summary(m, x, y, z, x[:600], y[:600], 1e-8)
    assert s["anchor_fraction_above_0.9999"] > 0.998
    assert s["bayes_accuracy_x"] > 0.999
    assert abs(s["bayes_accuracy_y"] - 0.963) < 0.006
    assert s["rank_ratio_kernel"] == 8
    assert s["rank_pmi_xcentred_gap"] == 8
    assert s["pmi_xcentred_s_K+1"] < 0.1 * s["pmi_xcentred_s_K"]


def test_gap_rank_and_probe_helpers():
    assert gap_rank(np.array([1.0, 0.9, 0.8, 1e-3, 9e-4, 8e-4]), 5) == 3
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((500, 3))
    target = feats @ rng.standard_normal((3, 2)) + 0.7  # exactly affine in the features
    np.testing.assert_allclose(probe_r2(feats, target, feats[:200], target[:200]), 1.0)
    noise = rng.standard_normal((500, 2))
    assert np.all(probe_r2(feats, noise, feats, noise) < 0.05)
    # canonical correlations: a shared column gives ρ = 1, an independent one ρ ≈ 0
    a = np.column_stack([feats[:, 0], rng.standard_normal(500)])
    b = np.column_stack([2 * feats[:, 0] + 1, rng.standard_normal(500)])
    cc = canonical_correlations(a, b)
    assert cc[0] == pytest.approx(1.0, abs=1e-10) and cc[1] < 0.15


def test_elbow_rule():
    dims = [1, 2, 4, 6, 8, 10, 12, 16]
    r2 = [0.14, 0.27, 0.47, 0.70, 0.955, 0.957, 0.955, 0.958]
    assert elbow(dims, r2, 0.95) == 8
    assert elbow(dims[::-1], r2[::-1], 0.95) == 8  # order of the sweep does not matter
    excess = [0.5, 0.2, 0.05, 0.011, 0.010, 0.010, 0.0101, 0.0102]
    assert elbow(dims, excess, 0.95, increasing=False) == 6
    assert elbow(dims, excess, 0.95, increasing=False, log=True) == 6


def test_the_elbow_is_where_the_curve_stays_not_its_first_crossing():
    dims = [1, 2, 4, 6, 8, 10]
    r2 = [0.10, 0.96, 0.50, 0.70, 0.955, 0.957]  # crosses the band at 2, leaves it, returns at 8
    assert elbow(dims, r2, 0.95) == 8
    assert elbow(dims, [0.1, 0.96, 0.5, 0.9, 0.96, 0.5], 0.95) is None  # leaves at the last D


def test_an_excess_curve_over_decades_is_read_on_a_log_scale():
    # falls 10x per step: on a linear scale the first step is 90 % of the gap, so the band
    # (95 %) is met at D = 4 although the excess still falls 100x after it; on log10 it is D = 16
    dims, excess = [1, 2, 4, 8, 16], [1.0, 0.1, 0.01, 0.001, 0.0001]
    assert elbow(dims, excess, 0.95, increasing=False) == 4
    assert elbow(dims, excess, 0.95, increasing=False, log=True) == 16


def test_the_elbow_refuses_a_nan():
    with pytest.raises(ValueError, match="not finite at D = \\[4\\]"):
        elbow([1, 2, 4, 8], [0.1, 0.5, float("nan"), 0.9], 0.95)
    with pytest.raises(ValueError, match="q > 0"):
        elbow([1, 2], [0.1, 0.0], 0.95, increasing=False, log=True)


def test_lcgm_pairs_are_deterministic_and_splits_independent():
    a, b = lcgm_pairs(SMALL, 0), lcgm_pairs(SMALL, 0)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert a["x_fit"].shape == (4096, 8) and a["y_train"].shape == (20000, 8)
    assert not np.allclose(a["x_fit"][:10], a["x_test"][:10])
    assert not np.allclose(lcgm_pairs(SMALL, 1)["x_train"][:10], a["x_train"][:10])


@pytest.fixture(scope="module")
def k4_sweep():
    """The real trainer on a K = 4 LCGM, D = 1..8, two seeds: the probe quality per run."""
    train = {
        "width": 64,
        "depth": 3,
        "lr": 3e-3,
        "weight_decay": 1e-4,
        "schedule": "cosine",
        "epochs": 5,
        "batch_size": 256,
        "max_loss": 100.0,
    }
    model = LatentClassModel.from_config(SMALL)
    dims = [1, 2, 3, 4, 5, 6, 8]
    out = {}
    data = [lcgm_pairs(SMALL, seed) for seed in (0, 1)]
    for dim in dims:
        towers, _, _ = train_lcgm(SMALL, train, 0.5, dim, [0, 1], 1, data)  # both seeds at once
        for r, seed in enumerate((0, 1)):
            feats = features(towers.replica(r), data[r])
            out[dim, seed] = probe_metrics(model, feats, data[r], 0.5, 1024)
    return dims, out


@pytest.mark.slow
def test_k4_elbow_is_at_4(k4_sweep):
    """The detector sees only the curve of mean probe R² versus D and must find K = 4."""
    dims, runs = k4_sweep
    quality = [np.mean([runs[d, s]["alignment_quality"] for s in (0, 1)]) for d in dims]
    assert elbow(dims, quality, 0.95) == 4
    # and D = K is where the target tower catches up: g needs all K log-ratio directions
    r2_g = {d: np.mean([runs[d, s]["probe_r2_g"] for s in (0, 1)]) for d in dims}
    assert r2_g[4] > 0.93 and r2_g[3] < 0.85


@pytest.mark.slow
def test_k4_probes_at_k_are_high_and_excess_small(k4_sweep):
    _, runs = k4_sweep
    for seed in (0, 1):
        r = runs[4, seed]
        assert r["probe_r2_f"] > 0.95 and r["probe_r2_g"] > 0.93
        assert r["cc_capture_g"] > 0.9
        assert 0 < r["heldout_excess"] < 0.02
        assert runs[1, seed]["heldout_excess"] > 10 * r["heldout_excess"]


def test_row_logsumexp_matches_scipy_where_a_naive_sum_overflows():
    from crl_approx.analyses.probes import row_logsumexp

    a = np.random.default_rng(0).normal(0, 300, size=(50, 70))  # exp overflows float64 unshifted
    np.testing.assert_allclose(row_logsumexp(a), logsumexp(a, axis=1), rtol=1e-13)
    assert np.isfinite(row_logsumexp(a)).all()


def test_block_infonce_in_its_buffer_equals_the_scipy_form_and_leaves_the_scores_alone():
    """block_infonce works in one reused buffer (row_logsumexp(overwrite=True)): the same loss as
    the formula written with scipy's logsumexp on fresh arrays (a second method), a score source
    read through views left as it was (a computation in the caller's matrix would change it and
    the second call's answer), in float64 and float32; and row_logsumexp's overwrite bitwise
    its copying form."""
    from crl_approx.analyses.probes import block_infonce, row_logsumexp

    rng = np.random.default_rng(3)
    tau = 0.5
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        scores = rng.normal(0, 4, size=(600, 600)).astype(dtype)
        kept = scores.copy()

        def view(sl, scores=scores):
            return scores[sl, sl]  # a view of the caller's matrix

        n, block = 600, 200
        want = np.mean(
            [
                tau * (logsumexp(scores[sl, sl] / tau, axis=1) - np.log(block)).mean()
                - np.diag(scores[sl, sl]).mean()
                for sl in (slice(b * block, (b + 1) * block) for b in range(n // block))
            ]
        )
        first = block_infonce(view, n, tau, block)
        np.testing.assert_allclose(first, want, rtol=rtol)
        np.testing.assert_array_equal(scores, kept)
        assert block_infonce(view, n, tau, block) == first
    a = rng.normal(0, 300, size=(40, 30))
    np.testing.assert_array_equal(row_logsumexp(a.copy(), overwrite=True), row_logsumexp(a))


def test_elbow_table_adds_the_saturation_rule_and_its_convergence_gate():
    """Per-seed curves flat from D = 1 (issue 26: the elbow rule's band then rests on noise): the
    saturation rule reads "≤ 1"; a curve that saturates at D = 2 < K − 1 fails on converged runs
    and is "unresolved: not converged" when the validation loss still falls by more than half
    the tolerance (mutation caught: dropping the gate)."""
    import pandas as pd

    from crl_approx.analyses.probes import ELBOW_CURVES, elbow_table
    from crl_approx.numerics.stats import summarise

    rng = np.random.default_rng(0)
    dims, rows = [1, 2, 4, 6], []
    for d in dims:
        for s in range(3):
            v = 0.5 if d >= 2 else 0.1
            rows.append(
                {"D": d, "seed": s}
                | {c: v * (1 + 0.01 * rng.standard_normal()) for c, *_ in ELBOW_CURVES}
            )
    runs = pd.DataFrame(rows)
    table = summarise(runs, "D", [c for c, *_ in ELBOW_CURVES])
    flat = [0.5] * 10
    falling = [0.5 - 0.02 * i for i in range(10)]
    for hist, verdict in ((flat, "fails"), (falling, "unresolved: not converged")):
        e = elbow_table(table, 0.95, 4, runs, {d: [hist] * 3 for d in dims}).set_index("curve")
        assert e.loc["probe_r2_f", "saturation"] == "2"
        assert e.loc["probe_r2_f", "saturation_verdict"] == verdict


def test_the_log_ratio_span_is_the_optimums_g_span():
    """Issue 26, finding 3: on a clean anchor the top-K y-span of the x-centred PMI kernel is the
    log-ratio span (cos² ≈ 1). Mutation caught: comparing only the top K − 1 singular vectors
    (a target direction missed counts as 0)."""
    from crl_approx.models.lcgm import g_span_check

    model = LatentClassModel.from_config(SMALL)
    x, y, _ = model.sample(1500, stream(0, 103))
    assert g_span_check(model, x, y)["g_span_min_cos2"] > 0.999
