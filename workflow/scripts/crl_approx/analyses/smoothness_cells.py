"""One ``train_smoothness`` job of Experiment S: every seed of one (world β, D) cell, the towers of
Table 1 trained with the ``population`` objective on the noise channel of shape β
(:class:`crl_approx.models.channel.NoiseChannel`, scale a from the world's record).

Both quadratures are the composite Gauss–Legendre rule of the exact numbers
(:func:`crl_approx.numerics.smoothness.channel_spectrum`): the towers train on
``smooth.train_panels`` panels and every epoch is evaluated on ``smooth.floor_panels`` panels (the
grid the rank-D floor is computed on), so ``mlp_excess_risk`` (final) and the history's
``excess_risk`` are L(f(x)ᵀg(y)) − L(τ·PMI) on that finer grid; the trainer is
:func:`crl_approx.training.population.train_population`.
"""

from __future__ import annotations

import logging
import time

from ..models.channel import NoiseChannel
from ..numerics.smoothness import channel_spectrum
from ..numerics.spectrum import mutual_information
from ..training import cells
from ..training.population import train_population
from ..training.towers import model_meta

log = logging.getLogger(__name__)

#: the ``world`` field of every metrics record of this experiment
WORLD = "channel"


def cell_spectra(beta: float, scale: float, smooth: dict):
    """(training spectrum, evaluation spectrum) of the world (β, a): ``smooth.train_panels`` and
    ``smooth.floor_panels`` panels of ``smooth.order`` nodes, y panels growing by
    ``smooth.growth``."""
    ch = NoiseChannel(float(beta), float(scale))
    out = []
    for key in ("train_panels", "floor_panels"):
        t0 = time.perf_counter()
        spec = channel_spectrum(ch, int(smooth[key]), int(smooth["order"]), smooth["growth"])
        log.info(
            "beta %g: %s %d: %d x %d nodes (%.1f s)",
            beta,
            key,
            smooth[key],
            spec.quad.x.size,
            spec.quad.y.size,
            time.perf_counter() - t0,
        )
        out.append(spec)
    return tuple(out)


def run_cell(
    beta: float,
    scale: float,
    smooth: dict,
    train: dict,
    tau: float,
    dim: int,
    seeds,
    threads: int,
    output,
    device: str = "auto",
) -> list:
    """The ``train_smoothness`` rule: train every seed of the cell, add the cell's fields to each
    metrics record and write each seed's model, checkpoints and metrics (``output.model``,
    ``output.checkpoints``, ``output.metrics``: lists in the order of ``seeds``)."""
    spec_train, spec_eval = cell_spectra(beta, scale, smooth)
    model, metrics, ckpts = train_population(
        spec_train, spec_eval, train, tau, dim, seeds, threads, WORLD, device
    )
    mi = mutual_information(spec_eval)
    for m in metrics:
        m |= {
            "world": WORLD,
            "beta": float(beta),
            "scale": float(scale),
            "D": int(dim),
            "train_panels": int(smooth["train_panels"]),
            "floor_panels": int(smooth["floor_panels"]),
            "mutual_information_grid": mi,
        }
        log.info(
            "beta %g D=%d seed %d: excess %.4e (tau*I = %.4e)",
            beta,
            dim,
            m["seed"],
            m["mlp_excess_risk"],
            tau * mi,
        )
    log.info("%d seeds trained together in %.1f s", model.replicas, metrics[0]["train_seconds"])
    meta = model_meta(model, dim, "population", train, tau)
    cells.write_outputs(model, metrics, ckpts, output, meta)
    return metrics
