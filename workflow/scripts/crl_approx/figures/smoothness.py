"""Experiment S's figure: per world, the eigenvalues λ_i against i with the registered slope
2β + 2, the truncation excess and the best rank-D InfoNCE excess (floor) against D with the
trained cells, and the D needed for each ε of the ladder."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .style import STYLE, _save, plt


def _colors(betas):
    cmap = plt.get_cmap("viridis")
    return {b: cmap(i / max(len(betas) - 1, 1)) for i, b in enumerate(betas)}


def plot_smoothness(curves_csv, eps_csv, trained_csv, path) -> None:
    curves, eps = pd.read_csv(curves_csv), pd.read_csv(eps_csv)
    trained = pd.read_csv(trained_csv)
    betas = sorted(curves["beta"].unique())
    col = _colors(betas)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.0))
        ax = axes[0]
        for b in betas:
            lam = curves[(curves["beta"] == b) & (curves["kind"] == "lambda")]
            ok = lam[lam["converged"] & (lam["value"] > 1e-12 * lam["value"].max())]
            ax.loglog(ok["x"], ok["value"], "o", ms=3, color=col[b], label=f"β = {b:g}")
            bad = lam[~lam["converged"] & (lam["value"] > 1e-12 * lam["value"].max())]
            ax.loglog(bad["x"], bad["value"], ".", ms=2, color=col[b], alpha=0.3)
            if b < 2 and len(ok) > 3:
                i = np.array([ok["x"].iloc[3], ok["x"].iloc[-1]], float)
                v0 = float(ok["value"].iloc[3])
                ax.loglog(i, v0 * (i / i[0]) ** (-(2 * b + 2)), "--", color=col[b], lw=0.8)
        ax.set(xlabel="index i", ylabel="λ_i", title="eigenvalues (dashed: slope −(2β+2))")
        ax.legend(fontsize=7)
        ax = axes[1]
        for b in betas:
            ex = curves[(curves["beta"] == b) & (curves["kind"] == "truncation_excess")]
            ex = ex[ex["value"] > 0]
            ax.loglog(ex["x"], ex["value"], "-", color=col[b], label=f"truncation, β = {b:g}")
            fl = curves[(curves["beta"] == b) & (curves["kind"] == "floor")]
            fl = fl[fl["value"] > 1e-14]
            ax.loglog(fl["x"], fl["value"], "s", mfc="none", color=col[b], ms=5)
            tr = trained[(trained["beta"] == b) & (trained["excess_mean"] > 0)]
            if len(tr):
                ax.loglog(tr["D"], tr["excess_mean"], "x", color=col[b], ms=7)
        ax.set(
            xlabel="D",
            ylabel="excess risk",
            title="truncation (line), floor (□, floor grid), trained (×)",
        )
        ax.legend(fontsize=7)
        ax = axes[2]
        for b in betas:
            e = eps[(eps["beta"] == b) & np.isfinite(eps["D_interp"])]
            ax.loglog(1 / e["eps"], e["D_interp"], "o-", color=col[b], ms=4, label=f"β = {b:g}")
        ax.set(xlabel="1/ε", ylabel="D needed (truncation)", title="D(ε)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        _save(fig, path)
