"""One ``train_digits`` job (Experiment R): every seed of one (pairing, D) cell trained at once by
:func:`.loops.fit_pairs`, the trainer of ``train_encoder``, with the same towers and optimiser.

Pairing ``K<k>`` (class pairs of a grouping with k classes) trains on a pool of
``digits.n_train_pairs`` pairs of train images per seed; pairing ``halves`` on the train images'
(top, bottom) halves. Validation pairs come from the validation images only. At each of
``digits.checkpoints`` checkpoints f and g of every replica are saved on every image of the data
set (float32): the analysis reads every held-out number from them at the checkpoint of lowest
validation loss (early stopping), so no model file is needed.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ..models import digits as dg
from ..models.rng import stream

log = logging.getLogger(__name__)


def grouping(groupings, pairing: str) -> list:
    """The groups of pairing ``K<k>``: the configured grouping with k classes."""
    k = int(pairing[1:])
    found = [g["groups"] for g in groupings if len(g["groups"]) == k]
    if len(found) != 1:
        raise ValueError(f"pairing {pairing!r}: {len(found)} configured groupings have {k} classes")
    return found[0]


def pairing_steps(digits: dict, pairing: str) -> int:
    """The step budget of one pairing's runs: ``halves_steps`` for the halves, the grouping's own
    ``steps`` where it sets one, else ``steps``."""
    if pairing == "halves":
        return int(digits["halves_steps"])
    k = int(pairing[1:])
    own = [g["steps"] for g in digits["groupings"] if len(g["groups"]) == k and "steps" in g]
    return int(own[0]) if own else int(digits["steps"])


def class_split_pairs(images, labels, codes, groups, digits: dict, seed: int, split: str, n: int):
    """Pairing 1's pairs of one split and seed: (x pixels, y pixels, the sampler's output with the
    image indices ``ix``, ``iy`` into the whole data set)."""
    code = dg.SPLITS.index(split)
    key = {
        "train": dg.STREAM_PAIRS_TRAIN,
        "val": dg.STREAM_PAIRS_VAL,
        "test": dg.STREAM_PAIRS_TEST,
    }[split]
    members = np.flatnonzero(codes == code)
    classes = dg.group_of_digit(groups)[labels[members]]
    prior, chan = dg.channel(len(groups), digits["keep_max"], digits["keep_min"])
    pairs = dg.sample_class_pairs(classes, prior, chan, n, stream(seed, key))
    pairs["ix"], pairs["iy"] = members[pairs["ix"]], members[pairs["iy"]]
    return images[pairs["ix"]], images[pairs["iy"]], pairs


def training_pairs(images, labels, codes, digits: dict, pairing: str, seed: int) -> dict:
    """x_train, y_train, x_val, y_val of one seed, as ``fit_pairs`` reads them."""
    if pairing == "halves":
        top, bottom = dg.halves(images)
        return {
            f"{m}_{s}": half[codes == dg.SPLITS.index(s)]
            for s in ("train", "val")
            for m, half in (("x", top), ("y", bottom))
        }
    groups = grouping(digits["groupings"], pairing)
    out = {}
    for split in ("train", "val"):
        n = digits[f"n_{split}_pairs"]
        x, y, _ = class_split_pairs(images, labels, codes, groups, digits, seed, split, n)
        out[f"x_{split}"], out[f"y_{split}"] = x, y
    return out


def modalities(images, pairing: str) -> tuple[np.ndarray, np.ndarray]:
    """Every image as the x and the y tower see it (the checkpoint inputs)."""
    return dg.halves(images) if pairing == "halves" else (images, images)


def run(digits, train, tau, pairing, dim, seeds, threads, images_path, output, device="auto"):
    """The ``train_digits`` rule: every seed of one (pairing, D) cell; writes each seed's
    metrics.json (the validation loss per checkpoint) and checkpoints.npz (f, g on every image)."""
    import torch

    from .. import integrity
    from ..runtime import atomic_path, phase
    from .loops import configure_threads, fit_pairs, select_device
    from .recorder import Recorder
    from .towers import build_model

    data = integrity.load_npz(images_path)
    images, labels, codes = data["images"], data["labels"], data["codes"]
    dev = select_device(device)
    configure_threads(threads, dev)
    pairs = [training_pairs(images, labels, codes, digits, pairing, s) for s in seeds]
    steps = pairing_steps(digits, pairing)
    run_train = train | {"epochs": digits["checkpoints"], "batch_size": digits["batch_size"]}
    d_x, d_y = pairs[0]["x_train"].shape[1], pairs[0]["y_train"].shape[1]
    model = build_model(seeds, d_x, d_y, dim, run_train).to(dev, torch.float32)
    rec = Recorder(model, run_train, modalities(images, pairing))
    t0 = time.perf_counter()
    fit_pairs(model, pairs, run_train, tau, dev, rec, steps=steps)
    wall = time.perf_counter() - t0
    log.info(
        "%d seeds, pairing %s, D = %d: %d steps in %.1f s", len(seeds), pairing, dim, steps, wall
    )
    texts, ckpts = [], []
    with phase("metrics"):
        for r in range(len(seeds)):
            metrics = rec.metrics(r, "digits", "samples", dim, tau, steps, wall)
            metrics |= {"pairing": pairing, "n_train_pairs": int(pairs[r]["x_train"].shape[0])}
            text = integrity.dumps_json(output.metrics[r], metrics, indent=1, allow_nan=False)
            texts.append(text)
            ck = rec.checkpoints(r)
            ckpts.append({k: v.astype(np.float32) if k != "epoch" else v for k, v in ck.items()})
    with phase("write"):
        for r in range(len(seeds)):
            integrity.save_npz(output.checkpoints[r], ckpts[r])
            with atomic_path(output.metrics[r]) as tmp:
                tmp.write_text(texts[r])
    return texts
