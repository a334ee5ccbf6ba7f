"""Experiment R's figure (rule plot_digits): four panels — (a) held-out excess versus D per
grouping K, K and the detected elbow marked; (b) the class operator's singular values beside the
learned features'; (c) pairing 2's MI bound beside pairing 1's; (d) example image pairs."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..integrity import load_npz
from .style import STYLE, _mean_sd, _save

#: one colour per pairing (groupings in config order, then the halves)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")


def _pairings(sweep: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(sweep["pairing"]))


def _panel_excess(ax, sweep, elbows) -> None:
    elbow = elbows[elbows["curve"] == "heldout_excess"].set_index("pairing")["elbow_D"]
    for color, pairing in zip(PALETTE, _pairings(sweep), strict=False):
        if pairing == "halves":
            continue
        t = sweep[sweep["pairing"] == pairing].sort_values("D")
        k = int(t["K"].iloc[0])
        _mean_sd(
            ax,
            t["D"],
            t,
            "heldout_excess_mean",
            "heldout_excess_sd",
            "o-",
            color=color,
            label=f"K = {k}",
        )
        ax.axvline(k, color=color, ls="--", lw=1)
        if pd.isna(elbow[pairing]):  # no D stays in the band: no star
            continue
        e = int(elbow[pairing])
        ax.plot(
            [e],
            t.set_index("D").loc[e, "heldout_excess_mean"],
            "*",
            ms=14,
            color=color,
            markeredgecolor="k",
        )
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel("representation dimension D")
    ax.set_ylabel("held-out InfoNCE excess (vs τ·PMI)")
    ax.set_title("(a) excess vs D (dashed: K; star: elbow)", fontsize=9)
    ax.legend(fontsize=7)


def _panel_spectrum(ax, classes, sv, sweep) -> None:
    k10 = classes[classes["K"] == classes["K"].max()]
    k = int(k10["K"].iloc[0])
    s = np.sqrt(k10["eigenvalue"].to_numpy())
    ax.plot(np.arange(1, k + 1), s / s[0], "ks-", label=f"class operator √λ (K = {k})")
    pairing = f"K{k}"
    dmax = int(sweep.loc[sweep["pairing"] == pairing, "D"].max())
    for color, (p, label) in zip(
        PALETTE, ((pairing, f"features, K = {k}, D = {dmax}"), ("halves", None)), strict=False
    ):
        rows = sv[sv["pairing"] == p]
        if rows.empty:
            continue
        d = dmax if p == pairing else int(rows["D"].max())
        mean = rows[rows["D"] == d].groupby("index")["sv_normalised"].mean()
        ax.plot(
            mean.index,
            mean.values,
            "o-",
            color=color,
            ms=3,
            label=label or f"features, halves, D = {d}",
        )
    ax.axvline(k, color="grey", ls="--", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value / largest")
    ax.set_title("(b) operator vs learned feature spectrum", fontsize=9)
    ax.legend(fontsize=7)


def _panel_mi(ax, sweep, classes) -> None:
    for color, pairing in zip(PALETTE, _pairings(sweep), strict=False):
        t = sweep[sweep["pairing"] == pairing].sort_values("D")
        label = "halves (pairing 2)" if pairing == "halves" else f"K = {int(t['K'].iloc[0])}"
        _mean_sd(ax, t["D"], t, "mi_bound_mean", "mi_bound_sd", "o-", color=color, label=label)
    for color, pairing in zip(PALETTE, _pairings(sweep), strict=False):
        if pairing != "halves":
            k = int(pairing[1:])
            mi = float(classes.loc[classes["K"] == k, "mutual_information"].iloc[0])
            ax.axhline(mi, color=color, ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("representation dimension D")
    ax.set_ylabel("held-out MI bound log N − L/τ (nats)")
    ax.set_title("(c) MI bound vs D (dotted: exact I(Z_x; Z_y))", fontsize=9)
    ax.legend(fontsize=7)


def _panel_examples(ax, ex) -> None:
    n = len(ex["class_x"])
    tiles = []
    for i in range(n):  # a class pair (x over y), then an image's top over its bottom half
        pair = np.vstack(
            [
                ex["class_x"][i].reshape(8, 8),
                np.full((1, 8), np.nan),
                ex["class_y"][i].reshape(8, 8),
            ]
        )
        half = np.vstack(
            [
                ex["half_x"][i].reshape(4, 8),
                np.full((1, 8), np.nan),
                ex["half_y"][i].reshape(4, 8),
                np.full((8, 8), np.nan),
            ]
        )
        tiles += [pair, np.full((17, 1), np.nan), half, np.full((17, 3), np.nan)]
    ax.imshow(np.hstack(tiles), cmap="gray_r", interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_title("(d) held-out pairs: class pair (x over y) | halves (top over bottom)", fontsize=9)


def plot_digits(inputs, path) -> None:
    sweep = pd.read_csv(inputs.sweep)
    elbows = pd.read_csv(inputs.elbow)
    classes = pd.read_csv(inputs.classes)
    sv = pd.read_csv(inputs.singular_values)
    ex = load_npz(inputs.examples)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(11.0, 8.0))
        _panel_excess(axes[0, 0], sweep, elbows)
        _panel_spectrum(axes[0, 1], classes, sv, sweep)
        _panel_mi(axes[1, 0], sweep, classes)
        _panel_examples(axes[1, 1], ex)
        fig.tight_layout()
        _save(fig, path)
