"""Population metrics of trained scores on the Gaussian mixture, and the training quadrature.

Every trained score is evaluated on the foundation's evaluation quadrature (``gmm.quadrature_nodes``
per component), in float64, so the reported excess risk and L2 distances are exact up to
quadrature error. The ``population`` objective trains on a coarser grid (:class:`Grid`), so the
evaluation is not on the training nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..models.gmm import GaussianMixture
from ..numerics.spectrum import (
    OperatorSpectrum,
    expect_product,
    infonce_loss,
    mixture_quadrature,
    self_normalised,
)
from .towers import per_replica


@dataclass
class Grid:
    """A quadrature grid as tensors: nodes, weights and the joint weights w_x w_y r."""

    x: torch.Tensor
    y: torch.Tensor
    wx: torch.Tensor
    log_wy: torch.Tensor
    joint: torch.Tensor

    @classmethod
    def from_mixture(cls, mix: GaussianMixture, nodes: int, dtype, device) -> Grid:
        q = mixture_quadrature(mix, nodes)
        pmi = mix.pmi(q.x, q.y)
        joint = q.wx[:, None] * q.wy[None, :] * np.exp(pmi)
        with np.errstate(divide="ignore"):
            log_wy = np.log(q.wy)

        def t(a):
            return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=device)

        return cls(t(q.x[:, None]), t(q.y[:, None]), t(q.wx), t(log_wy), t(joint))

    def loss(self, scores: torch.Tensor, tau: float) -> torch.Tensor:
        """The population InfoNCE loss of score matrices (R, n_x, n_y) on this grid: one number
        per replica, each computed on its replica alone (a reduction's summation order must not
        depend on the replicas beside it); a single matrix (n_x, n_y) gives one number."""

        def one(s):
            lse = torch.logsumexp(s / tau + self.log_wy, dim=-1)
            return tau * (lse * self.wx).sum(-1) - (self.joint * s).sum((-2, -1))

        return one(scores) if scores.dim() == 2 else per_replica(one, scores)


def population_metrics(spec: OperatorSpectrum, score: np.ndarray, tau: float, l_star: float):
    """Excess risk and L2 distances of a score matrix on the evaluation grid.

    ``mlp_l2_distance`` (the headline) is the squared L2(P_X ⊗ P_Y) distance between PMI and the
    self-normalised score ĥ = s/τ − log E_{y'~P_Y} exp(s(x, y')/τ); it matches the paper's column
    (PAPER.md). The variants are kept for the reader.
    """
    h = score / tau
    diff_selfnorm = spec.pmi - self_normalised(spec, h)
    diff_raw = spec.pmi - h
    # remove the L2-best c(x): c(x) = E_{P_Y}[PMI − h | x]
    centred = diff_raw - (diff_raw @ spec.quad.wy)[:, None]
    l2 = expect_product(spec, diff_selfnorm**2)
    return {
        "mlp_excess_risk": infonce_loss(spec, score, tau) - l_star,
        "mlp_l2_distance": l2,
        "l2_selfnorm_unsquared": math.sqrt(max(l2, 0.0)),
        "l2_best_cx_squared": expect_product(spec, centred**2),
        "l2_raw_squared": expect_product(spec, diff_raw**2),
    }
