"""The sample-size study's figure (rule plot_sample_size), in the style of :mod:`.plots`.

Left: excess risk against the number of distinct training pairs, one colour per D: pools at their
size n, the fresh stream at budget × batch pairs (open markers), with the rank-D floor (dotted),
the population-trained MLP (dashed) and the paper's value (solid) as horizontal lines. Right: the
fresh stream's excess against optimiser steps at the D of the budget axis, the fitted power law
extended to the extrapolated budget, which is marked on the paper's line with its interval.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..numerics import tiers
from .style import STYLE, _mean_sd, _save

DIM_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
#: the excess columns (mean, sd over seeds) drawn with error bars
EXCESS = ("mlp_excess_risk_mean", "mlp_excess_risk_sd")
#: the right panel's fitted line is drawn out to at most this multiple of the largest budget run
MAX_EXTRAPOLATION = 1000.0


def _color(i: int) -> str:
    return DIM_COLORS[i % len(DIM_COLORS)]


def plot_sample_size(table_csv, fits_csv, path) -> None:
    t = pd.read_csv(table_csv)
    fits = pd.read_csv(fits_csv)
    main = t[t["is_default_lr"] & (t["budget_multiplier"] == 1)]
    dims = sorted(t["D"].unique())
    with plt.rc_context(STYLE):
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11.5, 4.4), gridspec_kw={"wspace": 0.3})
        x_all = main["distinct_pairs"]
        span = (x_all.min() / 2, x_all.max() * 2)
        for i, dim in enumerate(dims):
            c = _color(i)
            sub = main[main["D"] == dim]
            pools = sub[sub["protocol"] != "fresh"].sort_values("distinct_pairs")
            fresh = sub[sub["protocol"] == "fresh"]
            x = pools["distinct_pairs"]
            _mean_sd(ax, x, pools, *EXCESS, "o-", color=c, label=f"D = {dim}: pools of n")
            if len(fresh):
                _mean_sd(ax, fresh["distinct_pairs"], fresh, *EXCESS, "o", mfc="white", color=c)
            first = sub.iloc[0]
            ax.hlines(first["approximation"], *span, colors=c, linestyles=":", lw=1)
            ax.hlines(first["population_mean"], *span, colors=c, linestyles="--", lw=1)
            if np.isfinite(first["paper_mlp_excess_risk"]):
                ax.hlines(first["paper_mlp_excess_risk"], *span, colors=c, linestyles="-", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*span)
        ax.set_xlabel("distinct training pairs (pool size n; fresh: steps × batch)")
        ax.set_ylabel("excess risk L(s) − L*")
        ax.set_title("Fixed step budget: excess vs training pairs")
        ax.plot([], [], "o", mfc="white", color="grey", label="fresh stream (open)")
        ax.plot([], [], ":", color="grey", label="rank-D floor")
        ax.plot([], [], "--", color="grey", label="population-trained MLP")
        ax.plot([], [], "-", color="grey", lw=0.8, label="paper")
        ax.legend(fontsize=7, ncol=2)

        # the curve drawn is the extrapolated model: population level + c·S^(−a) of the third part
        steps_fits = fits[fits["fit"] == "sampling vs steps (fresh)"]
        for i, dim in enumerate(dims):
            fresh = t[(t["D"] == dim) & t["is_default_lr"] & (t["protocol"] == "fresh")]
            fit = steps_fits[steps_fits["D"] == dim]
            if len(fresh) < 2 or not len(fit):
                continue
            c, f = _color(i), fit.iloc[0]
            fresh = fresh.sort_values("steps")
            label = f"D = {dim}: fresh, level + S^(−{f['exponent']:.2f})"
            _mean_sd(ax2, fresh["steps"], fresh, *EXCESS, "o", color=c, label=label)
            base = fresh["steps"].min() / fresh["budget_multiplier"].min()
            reach = f["budget_to_band"] * base
            s_max = fresh["steps"].max()
            end = min(reach, s_max * MAX_EXTRAPOLATION) if math.isfinite(reach) else s_max * 4
            s = np.geomspace(fresh["steps"].min(), max(end, s_max), 100)
            curve = f["population_mean"] + np.exp(f["log_prefactor"]) * s ** (-f["exponent"])
            ax2.plot(s, curve, "-", color=c, lw=1)
            band = f["reach_target"]
            if np.isfinite(band):
                ax2.axhline(band, color=c, lw=0.8, ls="-.")
                if math.isfinite(reach) and reach <= s_max * MAX_EXTRAPOLATION:
                    lo, hi = f["budget_to_band_lo"] * base, f["budget_to_band_hi"] * base
                    err = [[reach - lo], [hi - reach]] if np.isfinite([lo, hi]).all() else None
                    ax2.errorbar([reach], [band], xerr=err, fmt="D", color=c, capsize=4)
        ax2.set_xscale("log")
        ax2.set_yscale("log")
        ax2.set_xlabel("optimiser steps (batch fixed; fresh pairs every step)")
        ax2.set_ylabel("excess risk L(s) − L*")
        ax2.set_title("Fresh stream: excess vs steps, extrapolated")
        ax2.plot(
            [],
            [],
            "-.",
            color="grey",
            lw=0.8,
            label=f"reach band edge (paper × {1 + tiers.CLOSE_TOLERANCE:g})",
        )
        ax2.plot([], [], "D", color="grey", label="budget reaching it (interval)")
        ax2.legend(fontsize=7)
        _save(fig, path)
