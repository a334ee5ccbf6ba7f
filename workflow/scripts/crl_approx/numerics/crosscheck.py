"""Independent cross-checks of the quadrature spectrum by direct 2-D numerical integration.

These use neither the Gauss–Hermite grid, nor the SVD, nor the Nyström extension: they integrate the
closed-form densities on a box with composite Gauss–Legendre rules in both variables (Lebesgue
measure, equally spaced panels), so an error in the mixture-adapted discretisation would show. The
integration error is estimated by halving the number of panels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.polynomial.legendre import leggauss

from ..models.gmm import GaussianMixture

#: half-width of the integration box, in standard deviations beyond the outer component mean
BOX_SIGMAS = 12.0


def _box(mu: float, sigma: float):
    half = abs(mu) + BOX_SIGMAS * sigma
    return -half, half


#: panels per axis and Gauss–Legendre points per panel
PANELS, POINTS = 96, 12


def composite_legendre(a: float, b: float, panels: int = PANELS, points: int = POINTS):
    """Nodes and weights of a composite Gauss–Legendre rule for ∫_a^b · dt."""
    t, w = leggauss(points)
    edges = np.linspace(a, b, panels + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    return (mid[:, None] + half[:, None] * t[None, :]).ravel(), (half[:, None] * w).ravel()


def _integrate(fn, mix: GaussianMixture, panels: int = PANELS) -> float:
    x, wx = composite_legendre(*_box(mix.mu_x, mix.sigma_x), panels)
    y, wy = composite_legendre(*_box(mix.mu_y, mix.sigma_y), panels)
    return float(wx @ fn(x[:, None], y[None, :]) @ wy)


def integrate_with_error(fn, mix: GaussianMixture) -> tuple[float, float]:
    """The integral and |difference| to the same rule with half the panels."""
    fine = _integrate(fn, mix, PANELS)
    return fine, abs(fine - _integrate(fn, mix, PANELS // 2))


def mutual_information_direct(mix: GaussianMixture) -> tuple[float, float]:
    """I(X; Y) = ∫∫ p log p / (p_X p_Y), integrated directly."""

    def integrand(x, y):
        lp = mix.log_pxy(x, y)
        return np.exp(lp) * (lp - mix.log_px(x) - mix.log_py(y))

    return integrate_with_error(integrand, mix)


def pmi_second_moment_direct(mix: GaussianMixture) -> tuple[float, float]:
    """E_{P_X ⊗ P_Y}[PMI²] = ||PMI||²_HS = Σ_i λ_i, integrated directly."""

    def integrand(x, y):
        return np.exp(mix.log_px(x) + mix.log_py(y)) * mix.pmi_pointwise(x, y) ** 2

    return integrate_with_error(integrand, mix)


def crosscheck_table(mix: GaussianMixture, quadrature: dict) -> pd.DataFrame:
    """The quadrature's values (``quadrature``: mutual_information, minus_L_star_over_tau and
    sum_lambda, computed by the spectrum code) beside this module's direct integrals: I(X;Y) for
    the first two, E[PMI²] for the third. This module computes only the direct side."""
    mi_direct, mi_err = mutual_information_direct(mix)
    m2_direct, m2_err = pmi_second_moment_direct(mix)
    direct = {
        "mutual_information": (mi_direct, mi_err),
        "minus_L_star_over_tau": (mi_direct, mi_err),
        "sum_lambda": (m2_direct, m2_err),
    }
    out = pd.DataFrame(
        [(name, float(quadrature[name]), *direct[name]) for name in direct],
        columns=["quantity", "quadrature", "direct_integration", "integration_error"],
    )
    out["abs_diff"] = (out["quadrature"] - out["direct_integration"]).abs()
    scale = out[["quadrature", "direct_integration"]].abs().max(axis=1)
    out["rel_diff"] = out["abs_diff"] / scale
    return out
