"""The binary Gaussian mixture of the paper's Experiment 1, in closed form.

A latent sign z = +1 with probability ``prior`` (else -1); x | z ~ N(z mu_x, sigma_x^2) and
y | z ~ N(z mu_y, sigma_y^2), x and y conditionally independent given z. Then

    r(x, y) = p(x, y) / (p_X(x) p_Y(y)) = p(+|x) p(+|y) / prior + p(-|x) p(-|y) / (1 - prior),

and PMI = log r. Everything is computed in log space (log-sigmoids), so the PMI is exact to rounding
even at quadrature nodes twenty standard deviations out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_expit


@dataclass(frozen=True)
class GaussianMixture:
    mu_x: float
    sigma_x: float
    mu_y: float
    sigma_y: float
    prior: float = 0.5  # P(z = +1)

    @classmethod
    def from_config(cls, gmm: dict) -> GaussianMixture:
        return cls(
            mu_x=float(gmm["mu_x"]),
            sigma_x=float(gmm["sigma_x"]),
            mu_y=float(gmm["mu_y"]),
            sigma_y=float(gmm["sigma_y"]),
            prior=float(gmm.get("prior", 0.5)),
        )

    def swapped(self) -> GaussianMixture:
        """The same model with the roles of x and y exchanged."""
        return GaussianMixture(self.mu_y, self.sigma_y, self.mu_x, self.sigma_x, self.prior)

    # --- posteriors -------------------------------------------------------------------------
    @property
    def _log_prior_odds(self) -> float:
        return float(np.log(self.prior) - np.log1p(-self.prior))

    def llr_x(self, x):
        """Log likelihood ratio log N(x; mu_x, σ_x²) / N(x; −mu_x, σ_x²) = 2 mu_x x / σ_x²."""
        return 2.0 * self.mu_x * np.asarray(x, float) / self.sigma_x**2

    def llr_y(self, y):
        return 2.0 * self.mu_y * np.asarray(y, float) / self.sigma_y**2

    # --- PMI ----------------------------------------------------------------------------------
    def _g(self, llr):
        """(e^a − 1) / (π e^a + 1 − π) = (p(+|·) − π) / (π (1 − π)), without overflow."""
        pi = self.prior
        pos = llr > 0
        e = np.exp(-np.abs(llr))
        return np.where(
            pos,
            -np.expm1(-np.abs(llr)) / (pi + (1 - pi) * e),
            np.expm1(-np.abs(llr)) / (pi * e + 1 - pi),
        )

    def _pmi_from_llr(self, a, b):
        """PMI = log r with r = 1 + π(1 − π) g(a) g(b).

        The log1p form is exact where r is near 1 (PMI ≡ 0 exactly when mu_x or mu_y is 0); where
        r is far from 1 the log-sigmoid form avoids the cancellation 1 − (1 − tiny).
        """
        pi = self.prior
        u = pi * (1 - pi) * self._g(a) * self._g(b)
        la, lb = a + self._log_prior_odds, b + self._log_prior_odds
        far = np.logaddexp(
            log_expit(la) + log_expit(lb) - np.log(pi),
            log_expit(-la) + log_expit(-lb) - np.log1p(-pi),
        )
        return np.where(np.abs(u) < 0.5, np.log1p(np.clip(u, -0.5, 0.5)), far)

    def pmi(self, x, y):
        """PMI on the grid x × y: a (len(x), len(y)) matrix."""
        a = self.llr_x(np.atleast_1d(x))[:, None]
        b = self.llr_y(np.atleast_1d(y))[None, :]
        return self._pmi_from_llr(a, b)

    def pmi_pointwise(self, x, y):
        """PMI at the pairs (x[i], y[i]) (broadcasting)."""
        return self._pmi_from_llr(self.llr_x(x), self.llr_y(y))

    # --- densities (for independent cross-checks by direct integration) -----------------------
    # (scipy.stats is imported here, not at the top: importing it costs ~1.3 s of CPU, which every
    # job that imports this module — all the training jobs — would pay for a cross-check's use)
    def _log_components(self, v, mu, sigma):
        from scipy.stats import norm

        return (
            np.log(self.prior) + norm.logpdf(v, mu, sigma),
            np.log1p(-self.prior) + norm.logpdf(v, -mu, sigma),
        )

    def log_px(self, x):
        return np.logaddexp(*self._log_components(x, self.mu_x, self.sigma_x))

    def log_py(self, y):
        return np.logaddexp(*self._log_components(y, self.mu_y, self.sigma_y))

    def log_pxy(self, x, y):
        from scipy.stats import norm

        xp, xm = self._log_components(x, self.mu_x, self.sigma_x)
        yp = norm.logpdf(y, self.mu_y, self.sigma_y)
        ym = norm.logpdf(y, -self.mu_y, self.sigma_y)
        return np.logaddexp(xp + yp, xm + ym)

    # --- sampling ------------------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator):
        """n joint pairs (x, y) and their latent signs z."""
        z = np.where(rng.random(n) < self.prior, 1.0, -1.0)
        x = z * self.mu_x + self.sigma_x * rng.standard_normal(n)
        y = z * self.mu_y + self.sigma_y * rng.standard_normal(n)
        return x, y, z
