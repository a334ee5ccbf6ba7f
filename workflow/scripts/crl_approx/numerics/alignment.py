"""Subspaces of functions in L2(P), with P a weighted point set (quadrature nodes or samples).

A function is a column of values at the points; ``w`` are the points' weights (summing to 1). The
inner product is ⟨a, b⟩ = Σ_n w_n a_n b_n, so a weighted point set with weights as small as 1e-100
(the outer Gauss–Hermite nodes) is handled by whitening, √w·a, never by dividing by √w.

Constants. InfoNCE cannot see an additive c(x) in the score; in f(x)ᵀg(y) terms a constant
direction of g pairs with f into such a c(x), so the constant part of span(g) is unidentifiable.
Every function here is therefore centred under P before spans are compared (``centre=True``):
subspaces are compared modulo constants, on both sides, the same way for learned features and for
the target eigenfunctions. The default is centring; ``centre=False`` gives the raw comparison.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

#: singular values of a whitened function matrix below this fraction of the largest are dropped
#: (a direction that is numerically a combination of the others, or a constant removed by centring)
RANK_TOL = 1e-8


def centred(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each column minus its P-mean."""
    a = np.asarray(a, float).reshape(len(w), -1)
    return a - (w @ a)[None, :]


def whitened_basis(a: np.ndarray, w: np.ndarray, centre: bool = True) -> np.ndarray:
    """An orthonormal basis of span(columns of a) in L2(P), in whitened coordinates √w·(·):
    columns u with Σ u_k u_l = δ_kl. Its width is the numerical rank."""
    a = centred(a, w) if centre else np.asarray(a, float).reshape(len(w), -1)
    m = np.sqrt(w)[:, None] * a
    if m.shape[1] == 0:
        return m
    u, s, _ = np.linalg.svd(m, full_matrices=False)
    keep = s > RANK_TOL * max(s[0], 1e-300) if s.size else s > 0
    return u[:, keep]


def principal_cosines(a: np.ndarray, b: np.ndarray, w: np.ndarray, centre: bool = True):
    """Cosines of the principal angles between span(a) and span(b) in L2(P), descending (the
    canonical correlations under P when centred); as many as the smaller rank."""
    ua, ub = whitened_basis(a, w, centre), whitened_basis(b, w, centre)
    if ua.shape[1] == 0 or ub.shape[1] == 0:
        return np.zeros(0)
    return np.clip(np.linalg.svd(ua.T @ ub, compute_uv=False), 0.0, 1.0)


def subspace_alignment(a, b, w, centre: bool = True) -> dict:
    """Summary of the principal angles of span(a) against the target span(b): the mean and the
    smallest squared cosine over the target's directions (a target direction that span(a) cannot
    reach counts as 0)."""
    cos2 = principal_cosines(a, b, w, centre) ** 2
    k = whitened_basis(b, w, centre).shape[1]
    cos2 = np.concatenate([cos2, np.zeros(max(0, k - cos2.size))])[:k]
    return {
        "mean_cos2": float(cos2.mean()) if k else float("nan"),
        "min_cos2": float(cos2.min()) if k else float("nan"),
    }


def capture_fractions(a, targets, w, centre: bool = True) -> np.ndarray:
    """For each target column t_i, ‖P_a t_i‖² / ‖t_i‖² in L2(P): the fraction of t_i inside
    span(a). A target with no norm left (a constant, when centred) gives NaN."""
    ua = whitened_basis(a, w, centre)
    t = centred(targets, w) if centre else np.asarray(targets, float).reshape(len(w), -1)
    tw = np.sqrt(w)[:, None] * t
    norm2 = (tw**2).sum(0)
    inside = ((ua.T @ tw) ** 2).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm2 > RANK_TOL**2, inside / np.where(norm2 > 0, norm2, 1.0), np.nan)


def acquisition_steps(steps, capture: np.ndarray, threshold: float) -> np.ndarray:
    """Per direction (column of ``capture``, one row per recorded step in increasing order), the
    first recorded step at which its capture fraction reaches ``threshold``; inf if never."""
    steps = np.asarray(steps, float)
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must increase")
    hit = np.asarray(capture) >= threshold
    first = np.argmax(hit, axis=0)
    return np.where(hit.any(axis=0), steps[first], np.inf)


def order_correlation(steps_by_direction) -> float:
    """Spearman's rank correlation of the acquisition step with the direction's index i (ordered
    by decreasing λ_i): +1 when directions are acquired strictly in order of decreasing λ_i, −1 in
    reverse. Never-acquired directions (inf) rank last, tied. NaN with fewer than two directions or
    when every step is tied (no order is observable)."""
    t = np.asarray(steps_by_direction, float)
    if t.size < 2:
        return float("nan")
    t = np.where(np.isinf(t), np.finfo(float).max, t)
    if np.all(t == t[0]):
        return float("nan")
    return float(spearmanr(np.arange(t.size), t).statistic)


def learned_coefficients(f, g, psi, phi, s, wx, wy, tau: float) -> np.ndarray:
    """m_i = ⟨score/τ, ψ_i ⊗ φ̃_i⟩ / (√λ_i ‖φ̃_i‖²) in L2(P_X ⊗ P_Y) for the score f(x)ᵀg(y), with
    φ̃_i = φ_i centred under P_Y, √λ_i = s_i. Blind to any c(x) in the score (φ̃_i has mean 0); 1 for
    every i at τ·PMI + c(x), 0 for a score with no component along ψ_i ⊗ φ̃_i."""
    phic = centred(phi, wy)
    a = psi.T @ (wx[:, None] * f)  # ⟨ψ_i, f_k⟩
    b = phic.T @ (wy[:, None] * g)  # ⟨φ̃_i, g_k⟩
    return np.einsum("ik,ik->i", a, b) / tau / (np.asarray(s) * (wy @ phic**2))


def inside_fraction(a, b, w, centre: bool = True) -> float:
    """The captured fraction of the *learned* span(a) inside the target span(b): the mean squared
    cosine over span(a)'s directions (a direction of span(a) with no partner in span(b) counts as
    0). 1 exactly when span(a) ⊆ span(b); the counterpart of :func:`subspace_alignment`, which
    averages over the target's directions."""
    cos2 = principal_cosines(a, b, w, centre) ** 2
    r = whitened_basis(a, w, centre).shape[1]
    return float(cos2[:r].sum() / r) if r else float("nan")
