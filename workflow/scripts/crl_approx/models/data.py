"""Datasets as rule outputs: train and validation pairs drawn once per seed, read by every job."""

from __future__ import annotations

import logging

import numpy as np

from .. import integrity
from .gmm import GaussianMixture
from .rng import STREAM_FIT, STREAM_FRESH, STREAM_TEST, STREAM_TRAIN, STREAM_VAL, stream

log = logging.getLogger(__name__)

#: batches drawn per call of a fresh stream (fixed: batch k of a seed's stream is then the same
#: whatever the number of steps a run takes)
FRESH_CHUNK = 64


def gmm_pairs(gmm: dict, seed: int, splits=("train", "val")) -> dict[str, np.ndarray]:
    """The mixture's pairs of one seed: ``gmm.n_train`` training pairs (stream 1) and ``gmm.n_val``
    validation pairs (stream 2). A pool of n pairs for the sample-size study is this with
    ``n_train = n``: the pool of n = gmm.n_train is the `samples` run's own training set."""
    mix = GaussianMixture.from_config(gmm)
    out = {}
    for split in splits:
        key = {"train": STREAM_TRAIN, "val": STREAM_VAL}[split]
        x, y, z = mix.sample(gmm[f"n_{split}"], stream(seed, key))
        out[f"x_{split}"] = x[:, None]
        out[f"y_{split}"] = y[:, None]
        out[f"z_{split}"] = z
    return out


def fresh_blocks(model, seed: int, batch: int, chunk: int = FRESH_CHUNK):
    """A seed's fresh stream: endless blocks (x, y) of shape (chunk, batch) (the mixture's 1-D
    pairs) or (chunk, batch, d) (the LCGM's), every pair drawn anew from ``model`` (anything with
    ``sample(n, rng)``) by the seed's own generator (stream 5, apart from the pools' streams)."""
    rng = stream(seed, STREAM_FRESH)
    while True:
        x, y, _ = model.sample(chunk * batch, rng)
        yield x.reshape(chunk, batch, *x.shape[1:]), y.reshape(chunk, batch, *y.shape[1:])


#: the LCGM's splits: stream key and the config key of its size
LCGM_SPLITS = {
    "train": (STREAM_TRAIN, "n_train"),
    "val": (STREAM_VAL, "n_val"),
    "fit": (STREAM_FIT, "n_probe_fit"),
    "test": (STREAM_TEST, "n_probe_test"),
}


def lcgm_pairs(lcgm: dict, seed: int, splits=tuple(LCGM_SPLITS)) -> dict[str, np.ndarray]:
    """LCGM pairs: training and validation (the encoder), probe fitting and probe testing (fresh
    samples the encoder never saw), each from its own stream of the seed (a split's pairs do not
    depend on the other splits' sizes); ``splits`` those drawn."""
    from .lcgm import LatentClassModel

    model = LatentClassModel.from_config(lcgm)
    out = {}
    for split in splits:
        key, size = LCGM_SPLITS[split]
        x, y, z = model.sample(lcgm[size], stream(seed, key))
        out[f"x_{split}"], out[f"y_{split}"], out[f"z_{split}"] = x, y, z
    return out


def save_npz(arrays: dict, path) -> None:
    integrity.save_npz(path, arrays)


def run(dataset: str, params: dict, seed: int, output) -> None:
    """The ``make_dataset`` and ``make_pool`` rules: ``params`` is the dataset's config section
    (for a pool, with ``n_train`` the pool's size)."""
    arrays = {"gmm": gmm_pairs, "lcgm": lcgm_pairs}[dataset](params, seed)
    for name, arr in arrays.items():
        log.info("%s: shape %s, mean %.4f, sd %.4f", name, arr.shape, arr.mean(), arr.std())
    save_npz(arrays, output.pairs)
