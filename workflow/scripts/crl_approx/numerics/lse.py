"""``scipy.special.logsumexp(h, b=w[None, :], axis=1)`` on the row-major grids of the spectra,
bitwise, in a few passes over the array instead of scipy's many.

scipy 1.17's logsumexp broadcasts the weights to the array's shape, copies the array twice, and
first sums ``b·exp(a)`` directly (kept only where the stable result is not finite): about ten passes
over an n × n array (benchmarks/spectrum_speed.py measures what this saves a job). :func:`rows`
issues the stable algorithm's own element operations on the same values in the same layouts: the
row maximum m_i over the columns of non-zero weight; the weight of the maxima, W_i (the weight of
the row's one maximum, or the sum of ``where(max, w, 0)`` when the maximum repeats);
s_i = Σ_j w_j·exp(h_ij − m_i) with the maxima's terms 0; and log1p(s_i/W_i) + log W_i + m_i. Every
array it sums holds scipy's values in scipy's layout (C order, summed along rows), so numpy's
pairwise sums see the same numbers in the same order. Where the argument's assumptions fail
(float64 in C order; finite non-negative weights whose sum is below 1e300 times the least positive
one; every row's maximum finite and below 1e300 in size, so the result is finite), scipy computes
the answer, checked before the input is touched. tests/unit/test_lse.py compares the fast path
with scipy bit for bit (ties, zero weights, −inf entries) and the cases it hands back by value.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def rows(h: np.ndarray, w: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """log Σ_j w_j exp(h_ij) for each row i of h (n, m), weights w (m,): bitwise scipy's
    ``logsumexp(h, b=w[None, :], axis=1)``. ``overwrite``: h may be used as scratch."""
    top = _top(h, w) if _fits(h, w) else None
    return logsumexp(h, b=w[None, :], axis=1) if top is None else _rows(h, w, top, overwrite)


def _fits(h, w) -> bool:
    return (
        isinstance(h, np.ndarray)
        and isinstance(w, np.ndarray)
        and h.dtype == np.float64
        and w.dtype == np.float64
        and h.ndim == 2
        and h.flags.c_contiguous  # summed along rows in memory order, as scipy's copies are
        and w.ndim == 1
        and h.shape[1] == w.size
        and h.size > 0
        and bool(np.all(np.isfinite(w)) and np.all(w >= 0))
    )


def _top(h: np.ndarray, w: np.ndarray) -> np.ndarray | None:
    """The row maxima over the columns of non-zero weight, where the answer is sure to be finite
    (else None: scipy's case), read before anything is written. Each term w_j·exp(h_ij − m_i) is
    at most w_j, so s_i/W_i ≤ Σw/min w < 1e300 and log1p(s_i/W_i) + log W_i + m_i is finite."""
    used = w > 0
    if not used.any() or w.sum() >= 1e300 * w[used].min():
        return None
    if used.all():
        top = h.max(axis=1, keepdims=True)
    else:  # the maximum over the used columns (a masked reduction: slower, never writes)
        top = np.max(h, axis=1, where=used[None, :], initial=-np.inf, keepdims=True)
    size = np.abs(top)
    # finite and not near overflow (also NaN, ±inf); 0 or far from the subnormals, so that
    # h_ij − m_i is 0 exactly where h_ij = m_i also in a process that flushes subnormals to zero
    # (a training job: torch.set_flush_denormal), as scipy's h_ij == m_i is
    return top if np.all((size < 1e300) & ((size == 0) | (size > 1e-290))) else None


def _rows(h: np.ndarray, w: np.ndarray, top: np.ndarray, overwrite: bool) -> np.ndarray:
    a = h if overwrite and h.flags.writeable else None
    zero = w == 0
    if zero.any():  # scipy: a weight of 0 makes its term −inf, whatever h holds there
        a = np.array(h, order="C") if a is None else a
        a[:, zero] = -np.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # exactly 0 where h_ij = m_i (see _top), −inf where h_ij = −inf
        d = np.subtract(h if a is None else a, top, out=a)
        is_max = d == 0
        count = np.count_nonzero(is_max, axis=1)
        np.exp(d, out=d)
        d *= w
        if np.all(count == 1):
            first = np.argmax(is_max, axis=1)
            weight = w[first][:, None]  # Σ of zeros and one weight: that weight, exactly
            d[np.arange(d.shape[0]), first] = 0.0
        else:
            weight = np.sum(np.where(is_max, w, 0.0), axis=1, keepdims=True)
            d[is_max] = 0.0
        s = np.sum(d, axis=1, keepdims=True)
        # scipy's last steps on the (n, 1) columns, where _top's conditions leave s ≥ 0 and
        # W > 0: s/W where s ≠ 0 (and ±0/W is ±0), log |W| = log W, no negative sign to mark NaN
        out = np.log1p(s / weight) + np.log(weight) + top
    return out[:, 0]
