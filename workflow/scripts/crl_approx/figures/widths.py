"""Experiment W's figure: the excess against one tower's hidden width, per world, with the shape
Table 2 gives the width a tower needs drawn beside each measured curve."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics.widths import KEPT
from .style import STYLE, _save, plt

TOWERS = {"f": ("#1f77b4", "o", "f (anchor) varied"), "g": ("#ff7f0e", "s", "g (target) varied")}
WORLDS = {"lcgm": "LCGM, D = K (held-out InfoNCE excess)", "gmm": "mixture (population excess)"}


def table2_curve(law: str, exponent: float, w0: float, e0: float, widths) -> np.ndarray:
    """Table 2's law for the width needed, inverted to an excess against width and scaled to pass
    through the measured point (w0, e0): power w ∝ ε^(−q) gives e = e0·(w/w0)^(−1/q); polylog
    w ∝ log^p(1/ε) gives e = exp(−log(1/e0)·(w/w0)^(1/p)) (NaN where e0 is not in (0, 1))."""
    w = np.asarray(widths, float)
    if not (e0 > 0 and math.isfinite(e0)) or exponent <= 0:
        return np.full_like(w, np.nan)
    if law == "power":
        return e0 * (w / w0) ** (-1.0 / exponent)
    if e0 >= 1:
        return np.full_like(w, np.nan)
    return np.exp(-math.log(1 / e0) * (w / w0) ** (1.0 / exponent))


def anchor(sub: pd.DataFrame, eps_kept: float = math.nan) -> tuple[float, float]:
    """(width, excess) the Table 2 curve passes through: the narrowest converged cell whose excess
    is at or below ``eps_kept``, the smallest ε the tower reaches and keeps (Table 2's shape is
    asymptotic in small ε, while the widest cells' held-out excess is mostly estimation error on
    the LCGM); the narrowest converged cell when no cell is (or no level is kept); the narrowest
    if none converged."""
    ok = sub[sub["converged"]] if sub["converged"].any() else sub
    ok = ok.sort_values("width")
    below = ok[ok["excess_mean"] <= eps_kept]
    first = (below if not below.empty else ok).iloc[0]
    return float(first["width"]), float(first["excess_mean"])


def smallest_kept(eps: pd.DataFrame | None, world: str, tower: str) -> float:
    """The smallest ε of the ladder a tower reaches and keeps (NaN when none, or no table)."""
    if eps is None:
        return math.nan
    mine = eps[(eps["world"] == world) & (eps["tower"] == tower)]
    kept = mine[mine["status"].isin(KEPT)]
    return float(kept["eps"].min()) if not kept.empty else math.nan


def _span(table: pd.DataFrame, world: str) -> tuple[float, float]:
    """The range of the world's measured excess, widened by a factor of 3 each way."""
    e = table.loc[table["world"] == world, "excess_mean"]
    e = e[e > 0]
    return (float(e.min()) / 3, float(e.max()) * 3) if len(e) else (-np.inf, np.inf)


def plot_widths(table_csv, fits_csv, path, eps_csv=None) -> None:
    table = pd.read_csv(table_csv)
    fits = pd.read_csv(fits_csv)
    eps = pd.read_csv(eps_csv) if eps_csv else None
    worlds = [w for w in WORLDS if w in set(fits["world"])]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(worlds), figsize=(6.0 * len(worlds), 4.2), squeeze=False)
        for ax, world in zip(axes[0], worlds, strict=True):
            for fit in fits[fits["world"] == world].itertuples():
                color, marker, label = TOWERS[fit.tower]
                sub = table[
                    (table["world"] == world)
                    & (table["tower"] == fit.tower)
                    & (table["data"] == "1x")
                ].sort_values("width")
                ax.errorbar(
                    sub["width"],
                    sub["excess_mean"],
                    yerr=sub["excess_sd"].fillna(0),
                    fmt="-" + marker,
                    color=color,
                    capsize=3,
                    label=label,
                )
                w0, e0 = anchor(sub, smallest_kept(eps, world, fit.tower))
                grid = np.geomspace(sub["width"].min(), sub["width"].max(), 50)
                name = (
                    f"log^{fit.table2_exponent:g}(1/ε)"
                    if fit.table2_law == "polylog"
                    else f"ε^(−{fit.table2_exponent:.3g})"
                )
                curve = table2_curve(fit.table2_law, fit.table2_exponent, w0, e0, grid)
                lo, hi = _span(table, world)
                curve[(curve < lo) | (curve > hi)] = np.nan  # clipped to the measured range
                ax.plot(
                    grid,
                    curve,
                    ":",
                    color=color,
                    label=f"Table 2's sufficient width for {fit.tower} (∝ {name}; shape only), "
                    f"through w = {w0:g}",
                )
            two = table[(table["world"] == world) & (table["data"] == "2x")]
            if not two.empty:
                ax.errorbar(
                    two["width"],
                    two["excess_mean"],
                    yerr=two["excess_sd"].fillna(0),
                    fmt="D",
                    color="#2ca02c",
                    capsize=3,
                    label="both towers, 2× training pairs",
                )
            ax.set_xscale("log", base=2)
            positive = (table.loc[table["world"] == world, "excess_mean"] > 0).all()
            ax.set_yscale(
                "log" if positive else "symlog", **({} if positive else {"linthresh": 1e-4})
            )
            ax.set_xlabel("hidden width of the varied tower (the other at train.width)")
            ax.set_ylabel("excess over the exact PMI")
            ax.set_title(WORLDS[world])
            ax.legend(fontsize=7)
        fig.suptitle("Experiment W: excess against one tower's width (mean ± sd over seeds)")
        _save(fig, path)
