"""Experiment 4, the Monte Carlo half: draws of Δ = r(x, y) − r(x, y′) and their counts on the t
grid (rule ``estimate_noise_exponent``). Every fit of those counts is :mod:`.noise`'s
(rule ``assemble_noise``), so a change of window, interval level or bootstrap reruns no draws.

The ratio r is exact: on the mixture r = exp(PMI) from the log likelihood ratios; on the LCGM
r = Σ_k p(k|x) p(k|y)/π_k, with the posteriors drawn through the K projections of x and y on the
orthonormal class directions (:func:`_projected_posteriors`), K normals per point instead of d.
"""

from __future__ import annotations

import logging

import numpy as np

from ..models.gmm import GaussianMixture
from ..models.rng import stream
from .noise import STREAM_MC, grid_counts, t_grid

log = logging.getLogger(__name__)


# --- sampling -------------------------------------------------------------------------------------
def _model(dataset: str, params: dict):
    if dataset == "gmm":
        return GaussianMixture.from_config(params)
    from ..models.lcgm import LatentClassModel

    return LatentClassModel.from_config(params)


def _classes(prior: np.ndarray, m: int, rng) -> np.ndarray:
    """m class labels from ``prior`` by the inverse CDF of one uniform each."""
    labels = np.searchsorted(np.cumsum(prior), rng.random(m), side="right")
    return np.minimum(labels, prior.size - 1)  # guards a cumulative sum that ends below 1


def _gmm_draws(mix: GaussianMixture, scheme: str, m: int, rng):
    """r(x, y) and r(x, y′) of m triples: three normals and three uniforms per triple."""
    prior = np.array([1 - mix.prior, mix.prior])
    sign = np.array([-1.0, 1.0])
    zx = sign[_classes(prior, m, rng)]
    zy = zx if scheme == "conditional" else sign[_classes(prior, m, rng)]
    zy2 = sign[_classes(prior, m, rng)]
    x = zx * mix.mu_x + mix.sigma_x * rng.standard_normal(m)
    y = zy * mix.mu_y + mix.sigma_y * rng.standard_normal(m)
    y2 = zy2 * mix.mu_y + mix.sigma_y * rng.standard_normal(m)
    return np.exp(mix.pmi_pointwise(x, y)), np.exp(mix.pmi_pointwise(x, y2))


def _projected_posteriors(a: float, sigma: float, prior: np.ndarray, z: np.ndarray, rng):
    """p(k | v) for v = a·q_z + σ·ε with orthonormal q_1..q_K, drawn through the K projections
    v·q_k = a·1{k = z} + σ·ξ_k (ξ ~ N(0, I_K): projections of a standard normal on orthonormal
    directions are independent standard normals). The posterior depends on v only through them:
    log p(k|v) = (a·v·q_k − a²/2)/σ² + log π_k + const, so K normals per point replace d."""
    m, k = z.size, prior.size
    proj = sigma * rng.standard_normal((m, k))
    proj[np.arange(m), z] += a
    logits = (a / sigma**2) * proj + np.log(prior)
    logits -= logits.max(1, keepdims=True)
    post = np.exp(logits)
    post /= post.sum(1, keepdims=True)
    return post


def _lcgm_draws(model, scheme: str, m: int, rng):
    """r(x, y) = Σ_k p(k|x) p(k|y)/π_k and r(x, y′) of m triples, K normals per point."""
    a, b = _orthogonal_scale(model.means_x), _orthogonal_scale(model.means_y)
    zx = _classes(model.prior, m, rng)
    zy = zx if scheme == "conditional" else _classes(model.prior, m, rng)
    zy2 = _classes(model.prior, m, rng)
    px = _projected_posteriors(a, model.sigma_x, model.prior, zx, rng) / model.prior
    py = _projected_posteriors(b, model.sigma_y, model.prior, zy, rng)
    py2 = _projected_posteriors(b, model.sigma_y, model.prior, zy2, rng)
    return (px * py).sum(1), (px * py2).sum(1)


def _orthogonal_scale(means: np.ndarray) -> float:
    """The common length a of class means a·q_k with orthonormal q_k (an error otherwise: the
    projected sampler needs that structure, which LatentClassModel builds by construction)."""
    a = float(np.linalg.norm(means[0]))
    if not np.allclose(means @ means.T, a * a * np.eye(means.shape[0]), atol=1e-9 * max(a * a, 1)):
        raise ValueError("the LCGM class means are not a·(orthonormal directions)")
    return a


def sample_abs_delta(model, scheme: str, n: int, rng, chunk: int = 1_000_000) -> np.ndarray:
    """n draws of |r(x, y) − r(x, y')|, in chunks.

    ``marginal``: x, y, y' independent draws from P_X, P_Y, P_Y. ``conditional``: (x, y) a joint
    pair (one class), y' from P_Y. Each point costs one uniform (its class) and, for the LCGM, K
    normals (:func:`_projected_posteriors`) instead of d.
    """
    if scheme not in ("marginal", "conditional"):
        raise ValueError(f"unknown sampling scheme {scheme!r} (allowed: marginal, conditional)")
    draws = _gmm_draws if isinstance(model, GaussianMixture) else _lcgm_draws
    out = np.empty(n)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        r1, r2 = draws(model, scheme, m, rng)
        np.abs(r1 - r2, out=out[start : start + m])
    return out


# --- the rule ------------------------------------------------------------------------------------
def run(dataset: str, params: dict, noise: dict, seed: int, output) -> dict:
    """The ``estimate_noise_exponent`` rule: the Monte Carlo of one dataset and seed. It writes
    only the counts #{|Δ| ≤ t} on the t grid (``noise`` holds scheme, n_samples, chunk and the
    grid keys); every fit, window and bootstrap is the assembly's, so changing them reruns no
    Monte Carlo."""
    from ..integrity import write_json

    model = _model(dataset, params)
    abs_delta = sample_abs_delta(
        model, noise["scheme"], noise["n_samples"], stream(seed, STREAM_MC), noise["chunk"]
    )
    grid = t_grid(noise["t_min"], noise["t_max"], noise["points_per_decade"])
    counts = grid_counts(abs_delta, grid)
    record = {
        "dataset": dataset,
        "seed": seed,
        "scheme": noise["scheme"],
        "n_samples": int(noise["n_samples"]),
        "t": grid.tolist(),
        "count": counts.tolist(),
    }
    log.info(
        "%s seed %d: %d draws (scheme %s); P(|Δ| ≤ %g) = %.3e",
        dataset,
        seed,
        noise["n_samples"],
        noise["scheme"],
        grid[len(grid) // 2],
        counts[len(grid) // 2] / noise["n_samples"],
    )
    write_json(output.counts, record, indent=1)
    return record
