"""Datasets as rule outputs: train and validation pairs drawn once per seed, read by every job."""

from __future__ import annotations

import logging

import numpy as np

from .gmm import GaussianMixture
from .runtime import atomic_path

log = logging.getLogger(__name__)

#: independent random streams derived from one seed (numpy SeedSequence spawn keys)
STREAM_TRAIN, STREAM_VAL, STREAM_FIT, STREAM_TEST = 1, 2, 3, 4


def stream(seed: int, key: int) -> np.random.Generator:
    """A generator for (seed, stream key): streams of one seed never overlap."""
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(key,)))


def gmm_pairs(gmm: dict, seed: int) -> dict[str, np.ndarray]:
    mix = GaussianMixture.from_config(gmm)
    out = {}
    for split, key, n in (
        ("train", STREAM_TRAIN, gmm["n_train"]),
        ("val", STREAM_VAL, gmm["n_val"]),
    ):
        x, y, z = mix.sample(n, stream(seed, key))
        out[f"x_{split}"] = x[:, None]
        out[f"y_{split}"] = y[:, None]
        out[f"z_{split}"] = z
    return out


def lcgm_pairs(lcgm: dict, seed: int) -> dict[str, np.ndarray]:
    """LCGM pairs: training and validation (the encoder), probe fitting and probe testing (fresh
    samples the encoder never saw), each from its own stream of the seed."""
    from .lcgm import LatentClassModel

    model = LatentClassModel.from_config(lcgm)
    out = {}
    for split, key, n in (
        ("train", STREAM_TRAIN, lcgm["n_train"]),
        ("val", STREAM_VAL, lcgm["n_val"]),
        ("fit", STREAM_FIT, lcgm["n_probe_fit"]),
        ("test", STREAM_TEST, lcgm["n_probe_test"]),
    ):
        x, y, z = model.sample(n, stream(seed, key))
        out[f"x_{split}"], out[f"y_{split}"], out[f"z_{split}"] = x, y, z
    return out


def save_npz(arrays: dict, path) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def run(dataset: str, params: dict, seed: int, output) -> None:
    """The ``make_dataset`` rule: ``params`` is the dataset's config section."""
    arrays = {"gmm": gmm_pairs, "lcgm": lcgm_pairs}[dataset](params, seed)
    for name, arr in arrays.items():
        log.info("%s: shape %s, mean %.4f, sd %.4f", name, arr.shape, arr.mean(), arr.std())
    save_npz(arrays, output.pairs)
