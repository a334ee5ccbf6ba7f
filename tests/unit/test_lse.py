"""The spectra's row logsumexp (crl_approx.numerics.lse.rows): bit for bit scipy's
``logsumexp(h, b=w[None, :], axis=1)``, which is computed independently (another algorithm's
passes, its own broadcasting), on the cases its argument rests on and on those it hands back."""

import numpy as np
import pytest
from scipy.special import logsumexp

from crl_approx.models.gmm import GaussianMixture
from crl_approx.numerics import lse
from crl_approx.numerics.spectrum import expect_joint, operator_spectrum, spectrum_table


def scipy_rows(h, w):
    return logsumexp(h, b=w[None, :], axis=1)


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def case(kind: str, rng):
    n, m = int(rng.integers(1, 30)), int(rng.integers(1, 200))
    h = rng.normal(size=(n, m)) * rng.choice([1e-3, 1.0, 40.0, 700.0])
    w = rng.random(m)
    if kind == "normalised":
        w /= w.sum()
    elif kind == "ties":  # rows whose maximum repeats
        h = np.round(h)
    elif kind == "all_equal":
        h = np.full((n, m), float(rng.normal()))
    elif kind == "zero_weights":  # scipy makes the term −inf whatever h holds there
        w[rng.random(m) < 0.4] = 0.0
        w[0] = 0.0
        h[:, 0] = 1e300  # the largest entry, of weight 0: not the maximum
        w[-1] = 0.7  # (with one column: its own weight)
    elif kind == "minus_inf":
        h[rng.random((n, m)) < 0.2] = -np.inf
        h[:, -1] = 0.0  # every row keeps a finite entry
    return h, w


FAST = ["plain", "normalised", "ties", "all_equal", "zero_weights", "minus_inf"]


@pytest.mark.parametrize("kind", FAST)
def test_the_fast_path_is_scipy_bit_for_bit(kind):
    rng = np.random.default_rng(FAST.index(kind))
    for _ in range(150):
        h, w = case(kind, rng)
        top = lse._top(h, w) if lse._fits(h, w) else None
        assert top is not None, "the fast path handed back a case it is written for"
        assert same_bits(lse._rows(h.copy(), w, top, overwrite=False), scipy_rows(h, w))


def test_overwrite_uses_the_input_as_scratch_and_otherwise_leaves_it():
    rng = np.random.default_rng(7)
    h, w = case("plain", rng)
    kept = h.copy()
    expected = scipy_rows(h, w)
    assert same_bits(lse.rows(h, w), expected)
    assert same_bits(h, kept)
    assert same_bits(lse.rows(h, w, overwrite=True), expected)
    assert not same_bits(h, kept)  # it was the scratch


@pytest.mark.parametrize(
    "make",
    [
        lambda h, w: (np.where(np.arange(h.size).reshape(h.shape) == 3, np.nan, h), w),
        lambda h, w: (np.where(np.arange(h.size).reshape(h.shape) == 0, np.inf, h), w),
        lambda h, w: (np.full(h.shape, -np.inf), w),  # a row of nothing
        lambda h, w: (h, np.zeros_like(w)),  # no weight at all
        lambda h, w: (h, -w),  # negative weights: signs
        lambda h, w: (h, np.where(np.arange(w.size) == 1, np.nan, w)),
        lambda h, w: (h.astype(np.float32), w),
        lambda h, w: (h[:, :, None], w),
        lambda h, w: (np.asfortranarray(np.vstack([h, h])), w),  # summed in another order
    ],
    ids=[
        "nan",
        "plus_inf",
        "no_entry",
        "no_weight",
        "negative",
        "nan_weight",
        "float32",
        "3d",
        "fortran",
    ],
)
def test_cases_outside_the_argument_are_scipys_own(make):
    h, w = make(*case("plain", np.random.default_rng(11)))
    with np.errstate(all="ignore"):
        expected = logsumexp(h, b=w.reshape((1,) * (h.ndim - 1) + (-1,)), axis=1)
        got = lse.rows(h, w)
    assert np.array_equal(got, expected, equal_nan=True)


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_weight_so_small_that_the_stable_sum_overflows_gives_scipys_answer(overwrite):
    """The maximum at a subnormal weight: scipy's stable s/W overflows and it returns its direct
    sum instead; with or without the scratch, the answer is scipy's on the input as given (where
    subnormals count as zero, as in a process that trained, both take it as a zero weight)."""
    h, w = np.array([[0.0, -1e-3]]), np.array([1e-320, 1.0])
    with np.errstate(over="ignore"):  # scipy's own s/W overflows (then it sums directly)
        expected = scipy_rows(h, w)
        got = lse.rows(h.copy(), w, overwrite=overwrite)
    assert np.isfinite(expected).all() and expected[0] == pytest.approx(-1e-3, rel=1e-12)
    assert same_bits(got, expected)


def test_a_case_handed_back_leaves_the_scratch_untouched():
    """Weights too spread for the bound, a maximum near overflow: scipy's answer, from h as it
    was, though h was offered as scratch."""
    for h, w in (
        (np.array([[0.0, -1e-3]]), np.array([1e-305, 1.0])),
        (np.array([[1e305, 0.0]]), np.ones(2)),
        (np.array([[1e-300, 0.5e-300]]), np.ones(2)),  # a maximum near the subnormals
    ):
        expected, kept = scipy_rows(h, w), h.copy()
        assert same_bits(lse.rows(h, w, overwrite=True), expected)
        assert same_bits(h, kept)


def test_a_known_sum():
    """An answer known without either implementation: log Σ_j w_j e^(log c_j) = log Σ_j w_j c_j."""
    c = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, 0.25, 0.125, 8.0]])
    w = np.array([0.1, 0.2, 0.3, 0.4])
    got = lse.rows(np.log(c), w)
    assert got == pytest.approx(np.log(c @ w), rel=1e-15, abs=1e-15)


def test_the_spectrums_reused_arrays_are_the_expressions_values():
    """psi, phi and E_p on the node grid read arrays computed once; they equal the expressions
    evaluated afresh, bit for bit, and the table is that of a spectrum that computed nothing
    before (the caches are filled lazily, in another order)."""
    mix = GaussianMixture(0.9, 1.0, 1.4, 0.8, prior=0.4)
    spec = operator_spectrum(mix, 30)
    q = spec.quad
    for d in (1, 3, 7):
        inv = spec._inv_s(d)
        assert same_bits(spec.psi(d), (spec.pmi * np.sqrt(q.wy)[None, :]) @ spec.v[:, :d] * inv)
        assert same_bits(spec.phi(d), (spec.pmi.T * np.sqrt(q.wx)[None, :]) @ spec.u[:, :d] * inv)
    values = np.cos(spec.pmi)
    assert expect_joint(spec, values) == float(q.wx @ (np.exp(spec.pmi) * values) @ q.wy)
    fresh = operator_spectrum(mix, 30)
    assert spectrum_table(spec, [1, 2, 4], 0.5).equals(spectrum_table(fresh, [1, 2, 4], 0.5))
