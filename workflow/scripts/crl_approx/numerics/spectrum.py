"""The integral operator T of the PMI kernel, discretised by Gauss–Hermite quadrature.

Protocol (PAPER.md, Experiment 1; it reproduces the paper's Table 1, columns 1–2, to all printed
digits):

* each marginal is a two-component Gaussian mixture; ``n`` Gauss–Hermite nodes are placed on each
  component and weighted by the component's mixture weight, giving 2n nodes per modality whose
  weights integrate against P_X (resp. P_Y) exactly for polynomials of degree < 2n per component;
* the PMI is used uncentred; the eigenvalues λ_i of T*T are the squared singular values of
  A = diag(√w_x) · PMI · diag(√w_y);
* eigenfunctions are evaluated by the Nyström extension
  ψ_i(x) = λ_i^{-1/2} ∫ PMI(x, y) φ_i(y) dP_Y(y) (never as U[:, i] / √w, which divides rounding
  noise by weights as small as 1e-100);
* the population InfoNCE loss of a score matrix is evaluated exactly on the quadrature, with
  log-sum-exp for the inner expectation over P_Y and the density ratio r = exp(PMI) as the weight
  that turns P_X ⊗ P_Y into the joint law for the positive-pair term.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import roots_hermite

from ..models.gmm import GaussianMixture
from .lse import rows as log_mean_exp_rows

if TYPE_CHECKING:  # the tables' functions import pandas when called: a training job never does
    import pandas as pd
log = logging.getLogger(__name__)

#: singular values below this (absolute; the PMI is O(1)) are treated as exact zeros, so that a
#: degenerate model (mu = 0, PMI ≡ 0) yields an all-zero table instead of 0/0.
SINGULAR_FLOOR = 1e-13


@dataclass(frozen=True)
class Quadrature:
    """Nodes and weights for P_X (x, wx) and P_Y (y, wy)."""

    x: np.ndarray
    wx: np.ndarray
    y: np.ndarray
    wy: np.ndarray
    nodes_per_component: int


def component_nodes(mu: float, sigma: float, prior: float, n: int):
    """2n nodes and weights integrating against prior·N(mu, σ²) + (1 − prior)·N(−mu, σ²)."""
    t, w = roots_hermite(n)
    w = w / np.sqrt(np.pi)
    shift = sigma * np.sqrt(2.0) * t
    nodes = np.concatenate([mu + shift, -mu + shift])
    weights = np.concatenate([prior * w, (1.0 - prior) * w])
    return nodes, weights


def mixture_quadrature(mix: GaussianMixture, n: int) -> Quadrature:
    x, wx = component_nodes(mix.mu_x, mix.sigma_x, mix.prior, n)
    y, wy = component_nodes(mix.mu_y, mix.sigma_y, mix.prior, n)
    return Quadrature(x=x, wx=wx, y=y, wy=wy, nodes_per_component=n)


@dataclass
class OperatorSpectrum:
    """SVD of the weighted PMI kernel, with Nyström eigenfunctions."""

    mix: GaussianMixture
    quad: Quadrature
    pmi: np.ndarray  # PMI(x_i, y_j) on the node grid
    s: np.ndarray  # singular values, descending
    u: np.ndarray  # left singular vectors of A (columns)
    v: np.ndarray  # right singular vectors of A (columns)

    # computed once, read by every truncation and loss on the node grid (~50 of each per excess
    # curve): the arrays the expressions would give each time, bitwise
    @functools.cached_property
    def ratio(self) -> np.ndarray:  # exp PMI = r(x_i, y_j)
        return np.exp(self.pmi)

    @functools.cached_property
    def _kernel_y(self) -> np.ndarray:  # ψ's Nyström kernel on the x nodes
        return self.pmi * np.sqrt(self.quad.wy)[None, :]

    @functools.cached_property
    def _kernel_x(self) -> np.ndarray:  # φ's on the y nodes
        return self.pmi.T * np.sqrt(self.quad.wx)[None, :]

    @property
    def eigenvalues(self) -> np.ndarray:
        """λ_i of T*T (= squared singular values), descending, all 2n of them."""
        return self.s**2

    @property
    def n_computed(self) -> int:
        return int(self.s.size)

    def _inv_s(self, d: int) -> np.ndarray:
        s = self.s[:d]
        return np.where(s > SINGULAR_FLOOR, 1.0 / np.where(s > 0, s, 1.0), 0.0)

    def psi(self, d: int, x: np.ndarray | None = None) -> np.ndarray:
        """First d left eigenfunctions ψ_k at points x (default: the x nodes), by Nyström."""
        w_y = np.sqrt(self.quad.wy)[None, :]
        kernel = self._kernel_y if x is None else self.mix.pmi(x, self.quad.y) * w_y
        return kernel @ self.v[:, :d] * self._inv_s(d)

    def phi(self, d: int, y: np.ndarray | None = None) -> np.ndarray:
        """First d right eigenfunctions φ_k at points y (default: the y nodes), by Nyström."""
        w_x = np.sqrt(self.quad.wx)[None, :]
        kernel = self._kernel_x if y is None else self.mix.pmi(self.quad.x, y).T * w_x
        return kernel @ self.u[:, :d] * self._inv_s(d)

    def truncated_pmi(self, d: int) -> np.ndarray:
        """The rank-d truncation Σ_{k≤d} √λ_k ψ_k(x_i) φ_k(y_j) on the node grid."""
        return (self.psi(d) * self.s[:d]) @ self.phi(d).T

    def spectral_tail(self, d: int) -> float:
        """Σ_{i>d} λ_i over all computed eigenvalues."""
        return float(np.sum(self.eigenvalues[d:]))


def operator_spectrum(mix: GaussianMixture, n: int) -> OperatorSpectrum:
    quad = mixture_quadrature(mix, n)
    pmi = mix.pmi(quad.x, quad.y)
    a = np.sqrt(quad.wx)[:, None] * pmi * np.sqrt(quad.wy)[None, :]
    u, s, vt = np.linalg.svd(a)
    return OperatorSpectrum(mix=mix, quad=quad, pmi=pmi, s=s, u=u, v=vt.T)


# --- population quantities on the quadrature ---------------------------------------------------
def expect_product(spec: OperatorSpectrum, values: np.ndarray) -> float:
    """E_{P_X ⊗ P_Y}[values] on the node grid."""
    q = spec.quad
    return float(q.wx @ values @ q.wy)


def expect_joint(spec: OperatorSpectrum, values: np.ndarray) -> float:
    """E_{(x, y) ~ p}[values] on the node grid (weights w_x w_y r)."""
    return expect_product(spec, spec.ratio * values)


def mutual_information(spec: OperatorSpectrum) -> float:
    """I(X; Y) = E_p[PMI]."""
    return expect_joint(spec, spec.pmi)


def infonce_loss(spec: OperatorSpectrum, score: np.ndarray, tau: float) -> float:
    """Population InfoNCE L(s) = τ E_x log E_{y'~P_Y} exp(s(x, y')/τ) − E_p[s(x, y)].

    ``score`` is s(x_i, y_j) on the node grid. Algebraically equal to the paper's
    E_p[τ log E_{y'} exp((s(x, y') − s(x, y))/τ)], and minimised by s = τ·PMI + c(x) with value
    L* = −τ I(X; Y).
    """
    lse = log_mean_exp_rows(score / tau, spec.quad.wy, overwrite=True)
    return float(tau * (spec.quad.wx @ lse) - expect_joint(spec, score))


def self_normalised(spec: OperatorSpectrum, h: np.ndarray) -> np.ndarray:
    """h(x, y) − log E_{y'~P_Y} exp h(x, y'): the log density ratio that h implies.

    InfoNCE cannot see an additive c(x); this is the normalisation that makes E_{P_Y} exp(ĥ) = 1,
    the property the true PMI has.
    """
    return h - log_mean_exp_rows(h, spec.quad.wy)[:, None]


def spectrum_table(spec: OperatorSpectrum, dims, tau: float) -> pd.DataFrame:
    """One row per D: spectral tail, truncation excess risk, L2 errors, I(X; Y)."""
    import pandas as pd

    mi = mutual_information(spec)
    # L* evaluated on the same quadrature as L(s_D), so quadrature error cancels in the excess
    l_star = infonce_loss(spec, tau * spec.pmi, tau)
    rows = []
    for d in dims:
        trunc = spec.truncated_pmi(d)
        excess = infonce_loss(spec, tau * trunc, tau) - l_star
        tail = spec.spectral_tail(d)
        rows.append(
            {
                "D": int(d),
                "spectral_tail": tail,
                "truncation_excess_risk": excess,
                # ||PMI − PMI_D||² in L2(P_X ⊗ P_Y): equals the tail up to rounding (Parseval)
                "l2_truncation_error": expect_product(spec, (spec.pmi - trunc) ** 2),
                # squared L2 distance of PMI to the self-normalised truncation (the MLP columns'
                # definition, see the encoder rules), for a like-for-like comparison
                "truncation_l2_selfnorm": expect_product(
                    spec, (spec.pmi - self_normalised(spec, trunc)) ** 2
                ),
                "excess_to_tail_ratio": excess / tail if tail > 0 else 0.0,
                "mutual_information": mi,
                "L_star": l_star,
                "tau": tau,
                "quadrature_nodes": spec.quad.nodes_per_component,
            }
        )
    return pd.DataFrame(rows)


def eigenvalue_table(spec: OperatorSpectrum, n_eigenvalues: int) -> pd.DataFrame:
    import pandas as pd

    lam = spec.eigenvalues[:n_eigenvalues]
    return pd.DataFrame({"index": np.arange(1, lam.size + 1), "lambda": lam})


def relative_change(a, b):
    """|a − b| / max(|a|, |b|), and 0 where both are 0."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    scale = np.maximum(np.abs(a), np.abs(b))
    return np.where(scale > 0, np.abs(a - b) / np.where(scale > 0, scale, 1.0), 0.0)
