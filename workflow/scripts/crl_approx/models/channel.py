"""Experiment S's worlds: an additive-noise channel whose PMI has a cusp of order β.

x ~ N(0, 1), y = x + n, n independent of x with the generalised-normal density

    p_n(t) = β / (2a Γ(1/β)) · exp(−|t/a|^β),

so PMI(x, y) = log p_n(y − x) − log p_Y(y), with p_Y = N(0, 1) ∗ p_n analytic. The only non-smooth
point of the PMI is the diagonal y = x, where −|(y − x)/a|^β has Hölder exponent β (β < 2); β = 2
is the Gaussian channel, whose PMI is a quadratic polynomial (rank 3).

p_Y is computed by adaptive quadrature (scipy ``quad``, split at the cusp x = y) at each node; the
mutual information I(X; Y) = h(Y) − h(N) with h(N) in closed form and h(Y) by quadrature on the
y nodes. ``scale_for_information`` solves for the noise scale a that gives a prescribed I(X; Y).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize
from scipy.special import gammaln, roots_legendre

#: the noise density is negligible past |t/a|^β = TAIL_EXPONENT (e^−45 ≈ 3e-20 of its peak)
TAIL_EXPONENT = 45.0
#: x ~ N(0, 1) is integrated over |x| ≤ X_HALF_WIDTH (mass outside: 6e-17)
X_HALF_WIDTH = 8.5


@dataclass(frozen=True)
class NoiseChannel:
    beta: float  # the shape of the noise: the PMI's Hölder exponent across the diagonal (β < 2)
    scale: float  # a

    # --- densities --------------------------------------------------------------------------
    def log_noise(self, t):
        b, a = self.beta, self.scale
        return math.log(b / (2.0 * a)) - gammaln(1.0 / b) - np.abs(np.asarray(t, float) / a) ** b

    def noise_entropy(self) -> float:
        """h(N) in nats, closed form: 1/β − log(β / (2a Γ(1/β)))."""
        b, a = self.beta, self.scale
        return 1.0 / b - (math.log(b / (2.0 * a)) - float(gammaln(1.0 / b)))

    def noise_variance(self) -> float:
        """a² Γ(3/β) / Γ(1/β)."""
        b = self.beta
        return self.scale**2 * math.exp(float(gammaln(3.0 / b) - gammaln(1.0 / b)))

    def tail(self) -> float:
        """|t| past which p_n is below e^−TAIL_EXPONENT of its peak."""
        return self.scale * TAIL_EXPONENT ** (1.0 / self.beta)

    def density_y(self, y) -> np.ndarray:
        """p_Y(y) = ∫ φ(x) p_n(y − x) dx, by adaptive quadrature split at the cusp x = y."""
        lo, hi = -X_HALF_WIDTH - 4.0, X_HALF_WIDTH + 4.0
        c = -0.5 * math.log(2.0 * math.pi)

        def one(v: float) -> float:
            def f(x):
                return math.exp(c - 0.5 * x * x + float(self.log_noise(v - x)))

            pts = [min(max(v, lo + 1e-12), hi - 1e-12)]
            val, _ = integrate.quad(f, lo, hi, points=pts, limit=400, epsabs=1e-300, epsrel=1e-11)
            return val

        with warnings.catch_warnings():  # quad's round-off notes where the density is ~1e-200
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            vals = [one(float(v)) for v in np.ravel(y)]
        return np.array(vals).reshape(np.shape(y))

    def pmi(self, x, y, log_py=None) -> np.ndarray:
        """PMI(x_i, y_j) on the grid x × y (``log_py``: log p_Y at y, if already computed)."""
        x, y = np.asarray(x, float), np.asarray(y, float)
        if log_py is None:
            log_py = np.log(self.density_y(y))
        return self.log_noise(y[None, :] - x[:, None]) - np.asarray(log_py)[None, :]

    # --- the y nodes ------------------------------------------------------------------------
    def y_edges(self, x_edges: np.ndarray, growth: float) -> np.ndarray:
        """Panel edges for y: the x panels inside |y| ≤ X_HALF_WIDTH (where the cusp lies), then
        panels growing by ``growth`` out to X_HALF_WIDTH + tail (the noise's reach)."""
        h = float(x_edges[1] - x_edges[0])
        reach = X_HALF_WIDTH + 6.0 + self.tail()
        outer = [X_HALF_WIDTH]
        step = h
        while outer[-1] < reach:
            step *= growth
            outer.append(outer[-1] + step)
        outer = np.asarray(outer)
        return np.concatenate([-outer[::-1], x_edges[1:-1], outer])


def gauss_legendre_panels(edges: np.ndarray, order: int):
    """Nodes and weights of the composite Gauss–Legendre rule with ``order`` points per panel."""
    t, w = roots_legendre(order)
    a, b = edges[:-1, None], edges[1:, None]
    return ((a + b) / 2 + (b - a) / 2 * t[None, :]).ravel(), ((b - a) / 2 * w[None, :]).ravel()


def y_entropy(ch: NoiseChannel, panels: int, order: int, growth: float) -> float:
    """h(Y) = −∫ p_Y log p_Y on the y nodes of a grid with ``panels`` x panels."""
    x_edges = np.linspace(-X_HALF_WIDTH, X_HALF_WIDTH, panels + 1)
    y, w = gauss_legendre_panels(ch.y_edges(x_edges, growth), order)
    p = ch.density_y(y)
    ok = p > 0
    return float(-np.sum(w[ok] * p[ok] * np.log(p[ok])))


def information(ch: NoiseChannel, panels: int = 60, order: int = 8, growth: float = 1.25) -> float:
    """I(X; Y) = h(Y) − h(N) in nats (h(Y) away from the cusp is smooth: a modest rule suffices)."""
    return y_entropy(ch, panels, order, growth) - ch.noise_entropy()


def scale_for_information(beta: float, mi: float, xtol: float = 1e-10) -> float:
    """The noise scale a at which the channel of shape β carries I(X; Y) = ``mi`` nats."""

    def gap(log_a: float) -> float:
        return information(NoiseChannel(beta, math.exp(log_a))) - mi

    lo, hi = math.log(1e-3), math.log(1e2)
    return math.exp(optimize.brentq(gap, lo, hi, xtol=xtol))


def gaussian_channel_eigenvalues(noise_var: float) -> np.ndarray:
    """Closed form at β = 2: the three non-zero λ of the uncentred PMI of x ~ N(0, 1),
    y = x + N(0, s²).

    With v = 1 + s² and the Hermite bases h_k of N(0, 1) and k_k of N(0, v),
    PMI = ½ log(v/s²) − (y − x)²/(2s²) + y²/(2v) = c₀ + c_xy·h₁k₁ + c_x·h₂ + c_y·k₂ with
    x² = √2 h₂ + 1, y² = v(√2 k₂ + 1), xy = √v h₁k₁ (the y² coefficient is −1/(2s²v), since
    v − s² = 1): c_xy = √v/s², c_x = c_y = −1/(√2 s²), c₀ = ½ log(v/s²) − 1/s².
    λ = c_xy² and the squared singular values of [[c₀, c_y], [c_x, 0]] (rows h₀, h₂; columns
    k₀, k₂).
    """
    s2 = float(noise_var)
    v = 1.0 + s2
    c_xy = math.sqrt(v) / s2
    c_x = -1.0 / (math.sqrt(2.0) * s2)
    c_y = c_x
    c0 = 0.5 * math.log(v / s2) - 1.0 / s2
    sv = np.linalg.svd(np.array([[c0, c_y], [c_x, 0.0]]), compute_uv=False)
    return np.sort(np.concatenate([[c_xy**2], sv**2]))[::-1]
