"""One ``train_widths`` job of Experiment W: every seed of one (world, tower, width) cell, trained
by the trainer of Table 1 and the LCGM sweep (:mod:`crl_approx.training.cells`) with the hidden
width of one tower changed, and its excess measured as the cell at train.width measures it.

* mixture (``gmm``): the population excess of the final model on the evaluation quadrature
  (``mlp_excess_risk``, the number Table 1 reports), written by the trainer;
* LCGM: the held-out InfoNCE excess of the LCGM sweep (``heldout_excess``: in-batch loss of the
  learned score minus that of τ·PMI on the probe-test pairs, blocks of ``lcgm.n_candidates``),
  computed here with the probe rule's function (:func:`.probes.block_infonce`) on the seed's
  probe-test pairs. The data check trains on a second, twice as large training set
  (``train_paths``) for the same number of steps and is scored on the same probe-test pairs.

The cell at train.width is not trained here: it is the existing run (rule train_encoder), whose
excess the assembly reads from its metrics (mixture) or probes (LCGM).
"""

from __future__ import annotations

import logging

import numpy as np

from ..integrity import load_npz_group
from ..models.lcgm import LatentClassModel
from ..training import cells
from ..training.towers import embed, model_meta
from .probes import block_infonce

log = logging.getLogger(__name__)


def cell_train(train: dict, tower: str, width: int) -> dict:
    """The training keys of a cell: ``train`` with the hidden width of ``tower`` ("f" or "g")
    set to ``width`` (the other tower keeps train.width), or of both ("both": the data check)."""
    if tower not in ("f", "g", "both"):
        raise ValueError(f"unknown tower {tower!r} (allowed: f, g, both)")
    names = ("f", "g") if tower == "both" else (tower,)
    return dict(train) | {f"width_{t}": int(width) for t in names}


def heldout_excess(model, lcgm: dict, tau: float, tests: list[dict]) -> list[dict]:
    """Per replica: the held-out InfoNCE of the learned score and of τ·PMI on that seed's
    probe-test pairs, and their difference (the LCGM sweep's ``heldout_excess``)."""
    truth = LatentClassModel.from_config(lcgm)
    x = np.stack([t["x_test"] for t in tests])
    y = np.stack([t["y_test"] for t in tests])
    fx, gy = embed(model, x, y)
    block, out = lcgm["n_candidates"], []
    for r, t in enumerate(tests):
        n = t["x_test"].shape[0]
        loss = block_infonce(lambda sl, r=r: fx[r][sl] @ gy[r][sl].T, n, tau, block)
        star = block_infonce(
            lambda sl, t=t: tau * truth.pmi(t["x_test"][sl], t["y_test"][sl]), n, tau, block
        )
        out.append(
            {"heldout_infonce": loss, "heldout_infonce_bayes": star, "heldout_excess": loss - star}
        )
    return out


def run_cell(
    world: str,
    data: dict,
    train: dict,
    tau: float,
    dim: int,
    seeds,
    objective: str,
    cell: dict,
    threads: int,
    pairs_paths,
    output,
    train_paths=(),
    steps=None,
) -> list:
    """The ``train_widths`` rule: ``cell`` = {"tower", "width", "data"} ("data": "1x", or "2x"
    for the LCGM data check, trained on ``train_paths`` for ``steps`` steps); ``pairs_paths`` one
    file of sampled pairs per seed (the LCGM's probe-test pairs; the mixture's training pairs for
    objective samples)."""
    tower, width = cell["tower"], int(cell["width"])
    params = cell_train(train, tower, width)
    pairs = load_npz_group(pairs_paths) if pairs_paths else None
    if world == "gmm":
        model, metrics, ckpts = cells.train_gmm(
            data, params, tau, dim, seeds, objective, threads, pairs
        )
        key = "mlp_excess_risk"
    elif world == "lcgm":
        fit = load_npz_group(list(train_paths)) if train_paths else pairs
        model, metrics, ckpts = cells.train_lcgm(
            data, params, tau, dim, seeds, threads, fit, steps=steps
        )
        for m, h in zip(metrics, heldout_excess(model, data, tau, pairs), strict=True):
            m.update(h)
        key = "heldout_excess"
    else:
        raise ValueError(f"unknown world {world!r}")
    for m in metrics:
        m |= {"world": world, "tower": tower, "width": width, "data": cell.get("data", "1x")}
        log.info(
            "%s tower %s width %d seed %d: %s %.4e", world, tower, width, m["seed"], key, m[key]
        )
    log.info("%d seeds trained together in %.1f s", model.replicas, metrics[0]["train_seconds"])
    meta = model_meta(model, dim, objective, params, tau)
    cells.write_outputs(model, metrics, ckpts, output, meta)
    return metrics
