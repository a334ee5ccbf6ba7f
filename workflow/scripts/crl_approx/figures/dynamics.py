"""Figures of the training dynamics (results/tables/dynamics_steps.csv, dynamics.csv): alignment
against step, per-direction curves coloured by i, and the acquisition step against λ_i; and the
LCGM sweep's alignment with the posterior and log-ratio spans (dynamics_lcgm*.csv)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .style import STYLE, _save


def _per_step(steps_csv) -> pd.DataFrame:
    """The per-checkpoint columns, one row per (objective, D, seed, step)."""
    rows = pd.read_csv(steps_csv)
    return rows.drop_duplicates(["objective", "D", "seed", "step"])


def plot_dynamics_alignment(steps_csv, path) -> None:
    """Smallest squared cosine of the principal angles (f solid, g dashed) against the step, mean
    over seeds, one panel per objective, one colour per D."""
    rows = _per_step(steps_csv)
    objectives = sorted(rows["objective"].unique())
    dims = sorted(rows["D"].unique())
    cmap = plt.get_cmap("viridis")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(objectives), figsize=(10, 4), sharey=True, squeeze=False)
        for ax, objective in zip(axes[0], objectives, strict=True):
            sub = rows[rows["objective"] == objective]
            for j, d in enumerate(dims):
                mean = sub[sub["D"] == d].groupby("step")[["f_min_cos2", "g_min_cos2"]].mean()
                color = cmap(j / max(1, len(dims) - 1))
                ax.plot(mean.index, mean["f_min_cos2"], "-", color=color, label=f"D = {d}: f")
                ax.plot(mean.index, mean["g_min_cos2"], "--", color=color, label=f"D = {d}: g")
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("optimiser step")
            ax.set_title(f"objective: {objective}")
        axes[0][0].set_ylabel("smallest cos² of the principal angles")
        axes[0][-1].legend(fontsize=7, ncol=2)
        fig.suptitle(
            "Alignment of span(f) with span(ψ_1..ψ_D), span(g) with span(φ_1..φ_D)", y=1.03
        )
        _save(fig, path)


def plot_dynamics_directions(steps_csv, path) -> None:
    """Per direction i of the largest D: the learned coefficient m_i (top) and the subspace
    capture of ψ_i by span(f) (bottom) against the step, mean over seeds, coloured by i."""
    rows = pd.read_csv(steps_csv)
    d = int(rows["D"].max())
    rows = rows[rows["D"] == d]
    objectives = sorted(rows["objective"].unique())
    cmap = plt.get_cmap("plasma")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, len(objectives), figsize=(10, 6.5), sharex=True, squeeze=False)
        for c, objective in enumerate(objectives):
            sub = rows[rows["objective"] == objective]
            mean = sub.groupby(["direction", "step"])[["coefficient", "f_capture"]].mean()
            for i in range(1, d + 1):
                curve = mean.loc[i]
                color = cmap((i - 1) / max(1, d))
                lam = sub.loc[sub["direction"] == i, "lambda"].iloc[0]
                label = f"i = {i} (λ = {lam:.1e})"
                axes[0][c].plot(curve.index, curve["coefficient"], color=color, label=label)
                axes[1][c].plot(curve.index, curve["f_capture"], color=color)
            axes[0][c].set_title(f"objective: {objective}, D = {d}")
            axes[1][c].set_xlabel("optimiser step")
            for ax in axes[:, c]:
                ax.set_xscale("log")
        axes[0][0].set_ylabel("learned coefficient m_i")
        axes[1][0].set_ylabel("capture ‖P_f ψ_i‖²")
        axes[0][-1].legend(fontsize=7)
        _save(fig, path)


def plot_dynamics_order(table_csv, path) -> None:
    """The acquisition step (median over seeds, learned coefficient) of each direction against its
    eigenvalue λ_i, one marker per objective and one colour per D."""
    t = pd.read_csv(table_csv)
    markers = dict(zip(sorted(t["objective"].unique()), "os^", strict=False))
    dims = sorted(t["D"].unique())
    cmap = plt.get_cmap("viridis")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for row in t.itertuples():
            text = str(row.acquisition_steps).split(";")
            steps = [np.nan if s == "-" else float(s) for s in text]
            lams = [float(v) for v in str(row.lambdas).split(";")]
            color = cmap(dims.index(row.D) / max(1, len(dims) - 1))
            ax.loglog(
                lams[: len(steps)],
                steps,
                markers[row.objective] + "-",
                color=color,
                ms=5,
                alpha=0.8,
                label=f"{row.objective}, D = {row.D}"
                + ("" if np.isnan(row.rho_coefficient) else f" (ρ = {row.rho_coefficient:+.2f})"),
            )
        ax.invert_xaxis()
        ax.set_xlabel("eigenvalue λ_i (larger first)")
        ax.set_ylabel("acquisition step (m_i at half its final value)")
        ax.set_title("Order of acquisition against the spectrum")
        ax.legend(fontsize=6, ncol=2)
        _save(fig, path)


def plot_dynamics_lcgm(steps_csv, table_csv, path) -> None:
    """The LCGM sweep: per D (colour), the judged measure of prediction 3 against the step, mean
    over seeds; solid the alignment (D ≥ r, the centred target's rank), dashed the captured
    fraction of the learned span (D < r); one panel for f, one for g; K in the title."""
    rows, table = pd.read_csv(steps_csv), pd.read_csv(table_csv)
    ranks = {s: int(table[f"{s}_target_rank"].iloc[0]) for s in ("f", "g")}
    k = ranks["f"] + 1  # the posteriors of K classes have rank K − 1 once centred
    dims = sorted(rows["D"].unique())
    cmap = plt.get_cmap("viridis")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, side, name in zip(axes, "fg", ("posteriors", "log ratios"), strict=True):
            for j, d in enumerate(dims):
                full = d >= ranks[side]
                col = f"{side}_min_cos2" if full else f"{side}_inside"
                mean = rows[rows["D"] == d].groupby("step")[col].mean()
                style = "-" if full else "--"
                width = 2.5 if d == k else 1.2
                color = cmap(j / max(1, len(dims) - 1))
                ax.plot(mean.index, mean.to_numpy(), style, lw=width, color=color, label=f"D = {d}")
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("optimiser step")
            ax.set_title(f"span({side}) vs the {name} (centred rank {ranks[side]})")
        axes[0].set_ylabel("smallest cos² (solid) / inside fraction (dashed)")
        axes[1].legend(fontsize=7, ncol=2)
        fig.suptitle(f"LCGM sweep, K = {k} (thick line: D = K)", y=1.03)
        _save(fig, path)
