"""Experiment R's data model: the exact class PMI and L* against brute-force enumeration over
images, the class operator's spectrum against independent computations, the pair sampler, the
splits, and the loader's use of package files only."""

import socket
from pathlib import Path

import numpy as np
import pytest

from crl_approx.analyses.digits import class_spectrum, effective_rank, logistic_probe
from crl_approx.models import digits as dg
from crl_approx.numerics.floor import rank_d_floor
from crl_approx.numerics.spectrum import spectrum_table

TAU = 0.5


def tiny_world():
    """K = 3 classes of 2, 3 and 4 'images', a channel with unequal rows and a non-uniform prior."""
    sizes = np.array([2, 3, 4])
    classes = np.repeat(np.arange(3), sizes)
    prior = np.array([0.5, 0.3, 0.2])
    chan = np.array([[0.7, 0.2, 0.1], [0.25, 0.6, 0.15], [0.3, 0.3, 0.4]])
    return sizes, classes, prior, chan


def brute_force_joint(sizes, classes, prior, chan):
    """p(x, y) over every (image, image) pair by the generative story, summing over (z_x, z_y):
    z_x ~ π, z_y ~ C[z_x], x uniform in class z_x, y uniform in class z_y (with replacement)."""
    n = len(classes)
    joint = np.zeros((n, n))
    for a in range(3):
        for b in range(3):
            for x in range(n):
                for y in range(n):
                    if classes[x] == a and classes[y] == b:
                        joint[x, y] += prior[a] * chan[a, b] / sizes[a] / sizes[b]
    return joint


def test_class_pmi_and_l_star_match_brute_force_enumeration():
    sizes, classes, prior, chan = tiny_world()
    joint = brute_force_joint(sizes, classes, prior, chan)
    assert joint.sum() == pytest.approx(1.0)
    px, py = joint.sum(1), joint.sum(0)
    pmi_images = np.log(joint / np.outer(px, py))
    pmi, p_y = dg.class_pmi(prior, chan)
    np.testing.assert_allclose(pmi[np.ix_(classes, classes)], pmi_images, atol=1e-12)
    np.testing.assert_allclose(p_y, [py[classes == k].sum() for k in range(3)], atol=1e-12)
    mi_images = float(np.sum(joint * pmi_images))
    assert dg.class_mutual_information(prior, chan) == pytest.approx(mi_images, abs=1e-12)
    # the population InfoNCE at s = τ·PMI, by its definition on the image pairs, is −τ·I
    s = TAU * pmi_images
    inner = np.log((py[None, None, :] * np.exp((s[:, None, :] - s[:, :, None]) / TAU)).sum(2))
    l_star = float(np.sum(joint * TAU * inner))
    assert l_star == pytest.approx(-TAU * dg.class_mutual_information(prior, chan), abs=1e-12)


def test_sticky_channel_definition():
    prior, chan = dg.channel(4, 0.9, 0.3)
    keep = dg.keep_probabilities(4, 0.9, 0.3)
    np.testing.assert_allclose(keep, [0.9, 0.9 * (1 / 3) ** (1 / 3), 0.9 * (1 / 3) ** (2 / 3), 0.3])
    np.testing.assert_allclose(chan.sum(1), 1.0)
    np.testing.assert_allclose(np.diag(chan), keep + (1 - keep) / 4)
    off = chan[~np.eye(4, dtype=bool)].reshape(4, 3)
    np.testing.assert_allclose(off, np.repeat(((1 - keep) / 4)[:, None], 3, axis=1))
    np.testing.assert_allclose(prior, 0.25)


@pytest.mark.parametrize("k", [2, 5, 10])
def test_class_spectrum_against_independent_computations(k):
    prior, chan = dg.channel(k, 0.9, 0.3)
    spec = class_spectrum(prior, chan)
    pmi, p_y = dg.class_pmi(prior, chan)
    # (1) T*T as a matrix on L2(π): eigenvalues of PMI·diag(P_Y)·PMIᵀ·diag(π) (non-symmetric eig)
    lam = np.sort(np.linalg.eigvals(pmi @ np.diag(p_y) @ pmi.T @ np.diag(prior)).real)[::-1]
    np.testing.assert_allclose(spec.eigenvalues, lam, rtol=1e-9, atol=1e-12)
    # (2) the operator on images (40 images per class, weights 1/(K·40) and P_Y(z)/40): its
    # non-zero spectrum is the class operator's, the rest is zero
    n = 40
    z = np.repeat(np.arange(k), n)
    wx, wy = prior[z] / n, p_y[z] / n
    a = np.sqrt(wx)[:, None] * pmi[np.ix_(z, z)] * np.sqrt(wy)[None, :]
    s_img = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s_img[:k], spec.s, rtol=1e-9)
    assert s_img[k] < 1e-12
    # the design claim: distinct, decaying singular values
    assert np.all(np.diff(spec.s) < -1e-3 * spec.s[0])


def test_uniform_keep_gives_equal_nontrivial_singular_values():
    """Why the keep decays: a uniform keep makes the K − 1 non-trivial singular values equal."""
    prior, chan = dg.channel(6, 0.6, 0.6)
    s = class_spectrum(prior, chan).s
    np.testing.assert_allclose(s[1:], s[1], rtol=1e-9)


def test_truncation_and_floor_at_k_minus_1():
    """Rank K − 1 suffices for InfoNCE (a free c(x)): the floor is 0 at D = K − 1 while the
    spectral truncation is not; both vanish at D = K."""
    prior, chan = dg.channel(4, 0.9, 0.3)
    spec = class_spectrum(prior, chan)
    table = spectrum_table(spec, [3, 4], TAU).set_index("D")
    assert table.loc[3, "truncation_excess_risk"] > 1e-3
    assert abs(table.loc[4, "truncation_excess_risk"]) < 1e-12
    assert table.loc[3, "L_star"] == pytest.approx(-TAU * dg.class_mutual_information(prior, chan))
    assert rank_d_floor(spec, 3, TAU)["rank_d_floor_excess_risk"] < 1e-9
    assert rank_d_floor(spec, 2, TAU)["rank_d_floor_excess_risk"] > 1e-3


def test_sampler_follows_the_channel_and_prior():
    _sizes, classes, prior, chan = tiny_world()
    n = 200_000
    p = dg.sample_class_pairs(classes, prior, chan, n, np.random.default_rng(1))
    assert np.all(classes[p["ix"]] == p["zx"]) and np.all(classes[p["iy"]] == p["zy"])
    freq = np.bincount(p["zx"] * 3 + p["zy"], minlength=9).reshape(3, 3) / n
    np.testing.assert_allclose(freq, prior[:, None] * chan, atol=4e-3)
    # the sampler draws exactly the model whose PMI the brute force enumerates: the empirical
    # joint of (x, y) images equals p(x, y) (y uniform in its class, x itself included: a sampler
    # that skips x has p(x, x) = 0 and puts n/(n − 1) on the others, and fails here)
    sizes = np.bincount(classes)
    joint = np.bincount(p["ix"] * len(classes) + p["iy"], minlength=len(classes) ** 2) / n
    expected = brute_force_joint(sizes, classes, prior, chan).ravel()
    np.testing.assert_allclose(joint, expected, atol=3.5 * np.sqrt(expected / n).max())
    assert np.mean(p["ix"] == p["iy"]) > 0.05  # the class of 2 repeats its image often


def test_sampler_same_class_under_identity_channel():
    _, classes, prior, _ = tiny_world()
    p = dg.sample_class_pairs(classes, prior, np.eye(3), 5000, np.random.default_rng(2))
    assert np.all(p["zx"] == p["zy"]) and np.all(classes[p["ix"]] == classes[p["iy"]])


def test_splits_disjoint_per_digit_and_pairs_stay_in_their_split():
    from crl_approx.training.digits import class_split_pairs

    labels = np.repeat(np.arange(10), 50)
    codes = dg.split_codes(labels, 7, 0.6, 0.2)
    for d in range(10):
        assert np.bincount(codes[labels == d], minlength=3).tolist() == [30, 10, 10]
    assert not np.array_equal(codes, dg.split_codes(labels, 8, 0.6, 0.2))
    images = np.arange(500, dtype=float)[:, None] * np.ones((1, 4))
    cfg = {"keep_max": 0.9, "keep_min": 0.3}
    groups = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    for i, split in enumerate(dg.SPLITS):
        x, _y, p = class_split_pairs(images, labels, codes, groups, cfg, 0, split, 3000)
        assert np.all(codes[p["ix"]] == i) and np.all(codes[p["iy"]] == i)
        np.testing.assert_array_equal(x[:, 0], p["ix"])
        assert np.all(dg.group_of_digit(groups)[labels[p["iy"]]] == p["zy"])


def test_standardise_uses_train_statistics_only():
    rng = np.random.default_rng(0)
    pixels = rng.normal(3.0, 2.0, (100, 5))
    pixels[:, 4] = 0.0  # a blank pixel
    codes = np.repeat([0, 1, 2], [60, 20, 20])
    out = dg.standardise(pixels, codes)
    np.testing.assert_allclose(out[codes == 0, :4].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(out[codes == 0, :4].std(0), 1)
    assert np.all(out[:, 4] == 0)
    changed = pixels.copy()
    changed[codes == 2] += 100.0  # held-out pixels must not move the train rows
    np.testing.assert_array_equal(dg.standardise(changed, codes)[codes == 0], out[codes == 0])


def test_grouping_must_partition_the_digits():
    assert dg.group_of_digit([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]).tolist() == [0] * 5 + [1] * 5
    with pytest.raises(ValueError):
        dg.group_of_digit([[0, 1], [1, 2, 3, 4, 5, 6, 7, 8, 9]])


def test_halves_are_rows_0_to_3_and_4_to_7():
    img = np.arange(64)[None, :]
    top, bottom = dg.halves(img)
    assert top.reshape(4, 8)[3, 7] == 31 and bottom.reshape(4, 8)[0, 0] == 32


def test_loader_reads_package_files_with_the_network_off(monkeypatch):
    import sklearn
    from sklearn.datasets import _base

    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    pixels, labels = dg.load_images()
    assert pixels.shape == (1797, 64) and sorted(set(labels.tolist())) == list(range(10))
    assert pixels.min() == 0 and pixels.max() == 16
    data_file = Path(str(_base.resources.files(_base.DATA_MODULE) / "digits.csv.gz")).resolve()
    assert data_file.is_file()
    assert Path(sklearn.__file__).resolve().parent in data_file.parents


def test_the_validators_digit_counts_and_splits_are_the_data_sets():
    """The config validator knows the images per digit without loading scikit-learn
    (config.digits.DIGIT_COUNTS) and cuts splits as split_codes does: the held-out count it checks
    digits.halves_candidates against is the number of held-out images."""
    from crl_approx.config.digits import DIGIT_COUNTS, split_sizes

    _, labels = dg.load_images()
    assert tuple(np.bincount(labels).tolist()) == DIGIT_COUNTS
    # the default run's splits as its log records them (docs/experiment_r.md): 1078 / 359 / 360
    totals = np.sum([split_sizes(n, 0.6, 0.2) for n in DIGIT_COUNTS], axis=0)
    assert totals.tolist() == [1078, 359, 360]
    for fractions in ((0.6, 0.2), (0.5, 0.45), (0.3, 0.1)):
        codes = dg.split_codes(labels, 3, *fractions)
        for digit, n in enumerate(DIGIT_COUNTS):
            counts = np.bincount(codes[labels == digit], minlength=3)
            assert tuple(counts.tolist()) == split_sizes(n, *fractions)


def test_effective_rank_and_probe_on_known_inputs():
    rng = np.random.default_rng(0)
    # centred orthonormal columns scaled by singular values 2, 1, 1 (and 3 zero columns): the
    # normalised values are 1/2, 1/4, 1/4, so exp(entropy) = 2^1.5
    q, _ = np.linalg.qr(rng.standard_normal((400, 3)) - rng.standard_normal((400, 3)).mean(0))
    q -= q.mean(0)
    q, _ = np.linalg.qr(q)
    f = np.hstack([q * [2.0, 1.0, 1.0], np.zeros((400, 3))]) + 5.0  # an offset: centring removes it
    er, s = effective_rank(f)
    np.testing.assert_allclose(s[:3], [2.0, 1.0, 1.0], atol=1e-9)
    assert er == pytest.approx(2**1.5, rel=1e-9) and s[3] < 1e-9
    z = rng.integers(0, 3, 600)
    feats = np.eye(3)[z] * 4 + 0.1 * rng.standard_normal((600, 3))
    out = logistic_probe(feats[:400], z[:400], feats[400:], z[400:], 1e-4, 3)
    assert out["probe_accuracy"] == 1.0 and out["probe_logloss"] < 0.05
    noise = rng.standard_normal((600, 3))
    chance = logistic_probe(noise[:400], z[:400], noise[400:], z[400:], 1e-4, 3)
    assert chance["probe_logloss"] == pytest.approx(np.log(3), abs=0.1)


def test_mi_bound_of_the_true_pmi_is_close_below_the_mutual_information():
    """InfoNCE with N candidates bounds I from below by log N − L_N/τ; at s = τ·PMI and N = 1024
    candidates (I ≪ log N) the bound sits just below the exact I(Z_x; Z_y)."""
    from crl_approx.analyses.digits import mi_bound
    from crl_approx.analyses.probes import block_infonce

    prior, chan = dg.channel(5, 0.9, 0.3)
    pmi, _ = dg.class_pmi(prior, chan)
    classes = np.repeat(np.arange(5), 50)
    n, block = 16384, 1024
    p = dg.sample_class_pairs(classes, prior, chan, n, np.random.default_rng(3))
    loss = block_infonce(lambda sl: TAU * pmi[np.ix_(p["zx"][sl], p["zy"][sl])], n, TAU, block)
    mi = dg.class_mutual_information(prior, chan)
    assert mi - 0.03 < mi_bound(loss, TAU) < mi + 0.01
