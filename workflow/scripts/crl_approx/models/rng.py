"""Random streams: every stochastic step draws from its own stream of a seed, so that streams of
one seed never overlap and a result depends only on its seed and its stream key."""

from __future__ import annotations

import numpy as np

#: stream keys of the sampled datasets (numpy SeedSequence spawn keys); the Monte Carlo and
#: bootstrap keys live beside their users (noise.py, calibration.py)
STREAM_TRAIN, STREAM_VAL, STREAM_FIT, STREAM_TEST, STREAM_FRESH = 1, 2, 3, 4, 5


def stream(seed: int, key: int) -> np.random.Generator:
    """A generator for (seed, stream key): streams of one seed never overlap."""
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(key,)))
