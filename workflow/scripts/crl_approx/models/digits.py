"""Experiment R's data: scikit-learn's bundled 8×8 digits, their per-digit splits, the class
channel of pairing 1 with its exact class-level PMI, and the vectorised pair samplers.

* The images come from ``sklearn.datasets.load_digits``, which reads a file shipped inside the
  installed package (nothing is downloaded; tests/unit/test_digits.py runs it with the network
  off).
* Splits: every digit's images are permuted by ``split_seed`` and cut into train / validation /
  held-out; pixels are standardised with train-split statistics only.
* Pairing 1: a grouping maps each digit to one of K classes. z_x ~ π (uniform), z_y ~ C[z_x, ·]
  with the sticky channel C = diag(k) + (1 − k) πᵀ (class i kept with probability k_i, else
  redrawn from π), and x, y drawn uniformly and independently (with replacement) from the images
  of classes z_x, z_y of one split, so PMI(x, y) = log C[z_x, z_y] / P_Y(z_y) exactly (y = x can
  happen; a y ≠ x rule would make the class-level PMI inexact).
* Pairing 2: x the top half (rows 0–3), y the bottom half (rows 4–7) of one image.
"""

from __future__ import annotations

import numpy as np

from ..config.digits import split_sizes
from .rng import stream

#: stream keys of Experiment R (apart from the other experiments' keys): the split, the pools
STREAM_SPLIT, STREAM_PAIRS_TRAIN, STREAM_PAIRS_VAL, STREAM_PAIRS_TEST = 21, 22, 23, 24
SPLITS = ("train", "val", "test")
#: pixels of one half image (rows 0–3 or 4–7 of 8 × 8)
HALF = 32


# --- images and splits ----------------------------------------------------------------------------
def load_images() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 digits as (pixels (n, 64) float64 in 0..16, digit labels (n,)), from the file
    inside the installed scikit-learn."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return np.asarray(x, float), np.asarray(y, int)


def split_codes(labels, split_seed: int, train_fraction: float, val_fraction: float) -> np.ndarray:
    """0 (train), 1 (validation) or 2 (held out) per image: each digit's images permuted by the
    split seed, the first round(n·train_fraction) train, the next round(n·val_fraction)
    validation."""
    if train_fraction + val_fraction >= 1:
        raise ValueError("train_fraction + val_fraction must leave images for the held-out split")
    rng = stream(split_seed, STREAM_SPLIT)
    codes = np.full(len(labels), -1)
    for digit in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == digit))
        n_train, n_val, _ = split_sizes(len(idx), train_fraction, val_fraction)
        codes[idx[:n_train]] = 0
        codes[idx[n_train : n_train + n_val]] = 1
        codes[idx[n_train + n_val :]] = 2
    return codes


def standardise(pixels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(pixels − train mean) / train sd, per pixel; pixels constant on the train split (the blank
    corners) keep sd 1, so they stay constant (zero) everywhere they are constant."""
    train = pixels[codes == 0]
    sd = train.std(0)
    return (pixels - train.mean(0)) / np.where(sd > 0, sd, 1.0)


def halves(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(top half, bottom half) of flattened 8 × 8 images: rows 0–3 and rows 4–7."""
    return images[:, :HALF], images[:, HALF:]


# --- pairing 1: groupings, the class channel and its exact PMI ------------------------------------
def group_of_digit(groups) -> np.ndarray:
    """The class index of each digit 0–9 under a grouping (a partition of the digits)."""
    flat = sorted(d for g in groups for d in g)
    if flat != list(range(10)):
        raise ValueError(f"a grouping must hold every digit 0-9 exactly once, not {groups}")
    out = np.empty(10, int)
    for k, group in enumerate(groups):
        out[list(group)] = k
    return out


def keep_probabilities(k: int, keep_max: float, keep_min: float) -> np.ndarray:
    """k_i geometric from keep_max (i = 1) to keep_min (i = K)."""
    t = np.arange(k) / max(k - 1, 1)
    return keep_max * (keep_min / keep_max) ** t


def channel(k: int, keep_max: float, keep_min: float) -> tuple[np.ndarray, np.ndarray]:
    """(prior π, channel C) of the sticky class channel: C[i, j] = P(z_y = j | z_x = i) =
    k_i·[i = j] + (1 − k_i)·π_j, π uniform."""
    prior = np.full(k, 1.0 / k)
    keep = keep_probabilities(k, keep_max, keep_min)
    return prior, np.diag(keep) + (1.0 - keep)[:, None] * prior[None, :]


def class_pmi(prior: np.ndarray, chan: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(PMI[i, j] = log C[i, j] / P_Y(j), the y-class marginal P_Y = πᵀC)."""
    p_y = prior @ chan
    return np.log(chan / p_y[None, :]), p_y


def class_mutual_information(prior: np.ndarray, chan: np.ndarray) -> float:
    """I(Z_x; Z_y) = Σ π_i C_ij PMI_ij; the InfoNCE optimum is L* = −τ·I."""
    pmi, _ = class_pmi(prior, chan)
    return float(np.sum(prior[:, None] * chan * pmi))


# --- vectorised samplers --------------------------------------------------------------------------
def _members(classes: np.ndarray, k: int):
    """Image indices sorted by class, and each class's start and count in that order."""
    order = np.argsort(classes, kind="stable")
    counts = np.bincount(classes, minlength=k)
    if np.any(counts < 2):
        raise ValueError(f"every class needs >= 2 images in a split (counts {counts.tolist()})")
    return order, np.concatenate([[0], np.cumsum(counts)[:-1]]), counts


def sample_class_pairs(classes, prior, chan, n: int, rng) -> dict[str, np.ndarray]:
    """n pairs of pairing 1 over the images of one split (``classes``: their class indices):
    z_x ~ π, z_y ~ C[z_x], x uniform in class z_x, y uniform in class z_y (x itself included:
    then the class-level PMI is the exact PMI of the pairs; a y ≠ x rule would multiply the
    same-class ratio by n/(n − 1) and make PMI(x, x) = −∞).
    Returns positions into ``classes`` (ix, iy) and the classes (zx, zy). No per-pair loop."""
    k = len(prior)
    order, start, count = _members(np.asarray(classes), k)
    zx = rng.choice(k, size=n, p=prior)
    cdf = np.cumsum(chan, axis=1)
    zy = np.minimum((rng.random(n)[:, None] > cdf[zx]).sum(1), k - 1)
    rx = np.floor(rng.random(n) * count[zx]).astype(int)
    ry = np.floor(rng.random(n) * count[zy]).astype(int)
    return {"ix": order[start[zx] + rx], "iy": order[start[zy] + ry], "zx": zx, "zy": zy}


# --- the rule -------------------------------------------------------------------------------------
def run(digits: dict, output) -> dict:
    """The ``make_digits`` rule: standardised images, raw pixels, digit labels and split codes."""
    from ..integrity import save_npz

    pixels, labels = load_images()
    codes = split_codes(
        labels, digits["split_seed"], digits["train_fraction"], digits["val_fraction"]
    )
    images = standardise(pixels, codes)
    counts = {s: int((codes == i).sum()) for i, s in enumerate(SPLITS)}
    save_npz(output.images, {"images": images, "pixels": pixels, "labels": labels, "codes": codes})
    return counts
