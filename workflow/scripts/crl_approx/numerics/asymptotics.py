"""The small-t asymptotics of the noise condition on the binary mixture (derivation in
docs/noise_exponent.md): P(|Δ| ≤ t) = c·t·(log(1/t) + C₀) + o(t), with c = αβ and C₀ computed by
quadrature, the log-log slope of that curve, and its least-squares slope over a window."""

from __future__ import annotations

import itertools
import logging
import math
import warnings

import numpy as np
from scipy import integrate
from scipy.stats import norm

from ..models.gmm import GaussianMixture

log = logging.getLogger(__name__)


# --- small-t asymptotics of the binary mixture ----------------------------------------------------
def _weight(mix: GaussianMixture) -> float:
    return math.sqrt(mix.prior * (1 - mix.prior))


def _density_x(mix: GaussianMixture, x):
    return mix.prior * norm.pdf(x, mix.mu_x, mix.sigma_x) + (1 - mix.prior) * norm.pdf(
        x, -mix.mu_x, mix.sigma_x
    )


def _h(mix: GaussianMixture, a):
    """√(π(1−π))·g(a): the factor of r = 1 + A·b as a function of the log likelihood ratio."""
    return _weight(mix) * mix._g(np.asarray(a, float))


def _h_prime(mix: GaussianMixture, a):
    """d/da of √(π(1−π))·g(a), g(a) = (e^a − 1)/(π e^a + 1 − π): g' = e^a/(π e^a + 1 − π)²."""
    pi = mix.prior
    a = np.asarray(a, float)
    e = np.exp(-np.abs(a))
    # e^a/(π e^a + 1 − π)² written without overflow for either sign of a
    val = np.where(a > 0, e / (pi + (1 - pi) * e) ** 2, e / (pi * e + 1 - pi) ** 2)
    return _weight(mix) * val


def _side_constant(f_v, h_of_v, h_prime_v, f0: float, upper: float) -> float:
    """∫_0^upper (f(v) − f0·h'(v))/h(v) dv for a monotone h with h(0) = 0 (one side of C_A)."""

    def integrand(v):
        return (f_v(v) - f0 * h_prime_v(v)) / h_of_v(v)

    val, _ = integrate.quad(integrand, 0.0, upper, limit=400, epsabs=1e-13, epsrel=1e-11)
    return val


def gmm_asymptotics(mix: GaussianMixture) -> dict:
    """c and C₀ of P(|Δ| ≤ t) = c·t·(log(1/t) + C₀) + o(t) for the marginal scheme.

    A = h(x) with h increasing through 0 at x = 0 (llr_x(0) = 0). One side x > 0 contributes
    R = ∫_0^{h(∞)} (f₊(u) − f_A(0))/u du + f_A(0)·log h(∞) to α·C_A, written in x as
    ∫_0^∞ (f_X(x) − f_A(0)·h'(x))/h(x) dx + f_A(0)·log h(∞); the same for x < 0 with |h|.
    For B = b(y) − b(y') (f_b the density of b(y)): β = 2 f_B(0) = 2 ∫ f_b², and
    β·C_B = ∫ f_b(v) K(v) dv with K(v) = ∫ (f_b(w) − f_b(v)·1{|v − w| < 1})/|v − w| dw, every
    integral written in y (where the integrands are smooth) and done by adaptive quadrature.
    """
    if mix.mu_x == 0 or mix.mu_y == 0:
        raise ValueError("with mu = 0, r ≡ 1 and Δ ≡ 0: there is no small-t regime")
    kx = 2 * mix.mu_x / mix.sigma_x**2  # llr_x = kx·x
    fx0 = _density_x(mix, 0.0)
    fa0 = fx0 / (_h_prime(mix, 0.0) * kx)  # density of A at 0 (either side)
    alpha = 2 * fa0
    c_a = 0.0
    for sign in (1.0, -1.0):
        h_inf = abs(float(_h(mix, sign * 1e3)))  # h(±∞), reached to rounding by a = ±1000

        def f_v(v, s=sign):
            return _density_x(mix, s * v)

        def h_v(v, s=sign):
            return np.abs(_h(mix, s * kx * v))

        def hp_v(v, s=sign):
            return _h_prime(mix, s * kx * v) * kx

        upper = 40.0 * mix.sigma_x + 2 * abs(mix.mu_x)
        c_a += _side_constant(f_v, h_v, hp_v, fa0, upper) + fa0 * math.log(h_inf)
    c_a /= alpha

    # B = b(y) − b(y'), y, y' iid from P_Y
    ky = 2 * mix.mu_y / mix.sigma_y**2
    pi = mix.prior
    b_lo, b_hi = float(_h(mix, -1e3)), float(_h(mix, 1e3))

    lo_y, hi_y = -abs(mix.mu_y) - 14 * mix.sigma_y, abs(mix.mu_y) + 14 * mix.sigma_y

    # scalar versions with the math module: the nested quadrature calls these ~10^6 times
    w = _weight(mix)
    mu, sig = mix.mu_y, mix.sigma_y
    norm_c = 1.0 / (sig * math.sqrt(2 * math.pi))

    def fy(y):
        return norm_c * (
            pi * math.exp(-0.5 * ((y - mu) / sig) ** 2)
            + (1 - pi) * math.exp(-0.5 * ((y + mu) / sig) ** 2)
        )

    def b_of(y):
        a = ky * y
        e = math.exp(-abs(a))
        if a > 0:
            return w * -math.expm1(-a) / (pi + (1 - pi) * e)
        return w * math.expm1(a) / (pi * e + 1 - pi)

    def b_prime(y):
        a = ky * y
        e = math.exp(-abs(a))
        d = (pi + (1 - pi) * e) if a > 0 else (pi * e + 1 - pi)
        return w * e / d**2 * ky

    def b_inverse(w):
        g = w / _weight(mix)
        return (math.log1p(g * (1 - pi)) - math.log1p(-g * pi)) / ky

    # where b(y) is within 1e-12 of the end of its range, double precision cannot resolve f_b:
    # stop there (the y-mass beyond is what a Monte Carlo of 10^7 draws could not see either)
    lo_y = max(lo_y, b_inverse(b_lo + 1e-12 * (b_hi - b_lo)))
    hi_y = min(hi_y, b_inverse(b_hi - 1e-12 * (b_hi - b_lo)))

    def quad(fun, lo, hi, points=()):
        pts = sorted(p for p in points if lo < p < hi)
        edges = [lo, *pts, hi]
        return sum(
            integrate.quad(fun, e0, e1, limit=200, epsabs=1e-10, epsrel=1e-8)[0]
            for e0, e1 in itertools.pairwise(edges)
        )

    def k_of(y):
        """K(v) = ∫ (f_b(w) − f_b(v)·1{|v − w| < 1})/|v − w| dw at v = b(y), written in y'."""
        v, fbv = b_of(y), fy(y) / b_prime(y)

        def inner(y2):
            d = abs(v - b_of(y2))
            if d == 0.0:
                return 0.0
            return (fy(y2) - (fbv * b_prime(y2) if d < 1.0 else 0.0)) / d

        cuts = [y] + [b_inverse(v + s) for s in (-1.0, 1.0) if b_lo < v + s < b_hi]
        val = quad(inner, lo_y, hi_y, cuts)
        # the part of the window |v − w| < 1 outside the range of b, where f_b = 0
        for gap in (v - b_lo, b_hi - v):
            if gap < 1.0:
                val += fbv * math.log(gap)
        return val

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", integrate.IntegrationWarning)
        fb0 = quad(lambda y: fy(y) ** 2 / b_prime(y), lo_y, hi_y, [0.0])  # f_B(0) = ∫ f_b²
        beta = 2 * fb0
        c_b = quad(lambda y: fy(y) * k_of(y), lo_y, hi_y, [0.0]) / beta
    if caught:
        log.warning(
            "asymptotic constants: %d quadrature warnings (%s); treat c and C0 as approximate",
            len(caught),
            str(caught[0].message).splitlines()[0],
        )
    return {
        "alpha": alpha,
        "beta": beta,
        "c": alpha * beta,
        "C_A": c_a,
        "C_B": c_b,
        "C0": 1.0 + c_a + c_b,
        "quadrature_warnings": len(caught),
    }


def asymptotic_probability(t, c: float, c0: float):
    return c * np.asarray(t) * (np.log(1 / np.asarray(t)) + c0)


def asymptotic_slope(t, c0: float):
    """d log P / d log t of c·t·(log(1/t) + C₀): 1 − 1/(log(1/t) + C₀)."""
    return 1.0 - 1.0 / (np.log(1 / np.asarray(t)) + c0)
