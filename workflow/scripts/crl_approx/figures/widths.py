"""Experiment W's figure: the excess against one tower's hidden width, per world, with the world's
floor, the ε levels read above it, and the shape Table 2 gives the width a tower needs drawn
beside each measured curve (on the approximation part, added to the floor)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics.widths import KEPT
from .style import STYLE, _save, plt

TOWERS = {"f": ("#1f77b4", "o", "f (anchor) varied"), "g": ("#ff7f0e", "s", "g (target) varied")}


def world_title(world: str) -> str:
    """A panel's title: the LCGM at its own dimensions, at d_x = d_y = d, or the mixture."""
    if world == "lcgm":
        return "LCGM, D = K, fresh stream (held-out InfoNCE excess)"
    if world.startswith("lcgm_d"):
        return f"LCGM, d_x = d_y = {world.removeprefix('lcgm_d')}, fresh stream"
    return "mixture (population excess)"


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
    """(width, approximation part) the Table 2 curve passes through: the narrowest converged cell
    whose approximation part is at or below ``eps_kept``, the smallest ε the tower reaches and
    keeps (Table 2's shape is asymptotic in small ε); the narrowest converged cell when no cell
    is (or no level is kept); the narrowest if none converged."""
    ok = sub[sub["converged"]] if sub["converged"].any() else sub
    ok = ok.sort_values("width")
    below = ok[ok["approx_mean"] <= eps_kept]
    first = (below if not below.empty else ok).iloc[0]
    return float(first["width"]), float(first["approx_mean"])


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


def plot_widths(table_csv, fits_csv, path, eps_csv=None, floors_csv=None) -> None:
    table = pd.read_csv(table_csv)
    fits = pd.read_csv(fits_csv)
    eps = pd.read_csv(eps_csv) if eps_csv else None
    floors = pd.read_csv(floors_csv).set_index("world") if floors_csv else None
    # the LCGM at its own dimensions, the dimension sweep's, then the mixture
    worlds = sorted(set(fits["world"]), key=lambda w: (w == "gmm", w != "lcgm", w))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(worlds), figsize=(5.2 * len(worlds), 4.4), squeeze=False)
        for ax, world in zip(axes[0], worlds, strict=True):
            mine = table[(table["world"] == world) & (table["budget"] == "1x")]
            for fit in fits[fits["world"] == world].itertuples():
                color, marker, label = TOWERS[fit.tower]
                sub = mine[mine["tower"] == fit.tower].sort_values("width")
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
                floor = float(sub["floor"].iloc[0])
                curve = floor + table2_curve(fit.table2_law, fit.table2_exponent, w0, e0, grid)
                lo, hi = _span(table, world)
                curve[(curve < lo) | (curve > hi)] = np.nan  # clipped to the measured range
                ax.plot(
                    grid,
                    curve,
                    ":",
                    color=color,
                    label=f"floor + Table 2's width law for {fit.tower} (∝ {name}; shape only)",
                )
            if floors is not None and world in floors.index:
                f = floors.loc[world]
                ax.axhline(f["floor"], color="k", ls="--", lw=1, label=f"floor ({f['floor_kind']})")
                if math.isfinite(f["budget_excess"]):
                    ax.axhline(
                        f["budget_excess"], color="0.5", ls="-.", lw=1, label="widest, 2× steps"
                    )
                if eps is not None:
                    read = eps[(eps["world"] == world) & (eps["eps"] >= f["read_limit"])]
                    for i, e in enumerate(sorted(set(read["eps"]))):
                        ax.axhline(
                            f["floor"] + e,
                            color="0.8",
                            lw=0.8,
                            zorder=0,
                            label="floor + ε (levels read)" if i == 0 else None,
                        )
            ax.set_xscale("log", base=2)
            positive = (mine["excess_mean"] > 0).all()
            ax.set_yscale(
                "log" if positive else "symlog", **({} if positive else {"linthresh": 1e-4})
            )
            ax.set_xlabel("hidden width of the varied tower (the other at train.width)")
            ax.set_ylabel("excess over the exact PMI")
            ax.set_title(world_title(world), fontsize=9)
            ax.legend(fontsize=6)
        fig.suptitle("Experiment W: excess against one tower's width (mean ± sd over seeds)")
        _save(fig, path)
