"""Figures: each is drawn by its own plot rule from cached tables (a cosmetic change retrains
nothing). matplotlib with the Agg backend, one style for all, SVG output (inlined by the report)."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from .runtime import atomic_path

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "svg.fonttype": "none",  # text stays text: selectable, crisp at any zoom
    "svg.hashsalt": "crl-approx",  # deterministic SVG ids
}
COLORS = {"ours": "#1f77b4", "paper": "#d62728", "floor": "#2ca02c", "samples": "#ff7f0e"}


def _save(fig, path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)


def plot_spectrum(eigenvalues_csv, spectrum_csv, path) -> None:
    eig = pd.read_csv(eigenvalues_csv)
    spec = pd.read_csv(spectrum_csv)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.semilogy(eig["index"], eig["lambda"], "o-", ms=3, color=COLORS["ours"], label="λ_i")
        ax.semilogy(
            spec["D"] + 1,
            spec["spectral_tail"],
            "s",
            color=COLORS["paper"],
            label="tail Σ_{i>D} λ_i (at i = D+1)",
        )
        ax.set_xlabel("index i")
        ax.set_ylabel("eigenvalue of T*T")
        ax.set_title("Gaussian mixture: spectrum of the PMI operator")
        ax.legend()
        _save(fig, path)


def plot_excess(table1_csv, path) -> None:
    t = pd.read_csv(table1_csv)
    suffixes = [
        c[len("mlp_excess_risk_mean") :] for c in t.columns if c.startswith("mlp_excess_risk_mean")
    ]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for col, style, color, label in (
            ("spectral_tail", "^:", "grey", "spectral tail"),
            ("truncation_excess_risk", "o-", COLORS["ours"], "truncation (ours)"),
            ("rank_d_floor_excess_risk", "v-", COLORS["floor"], "rank-D floor (ours)"),
        ):
            ax.semilogy(t["D"], t[col], style, color=color, label=label)
        for suffix, color in zip(suffixes, ("#9467bd", COLORS["samples"]), strict=False):
            name = suffix.lstrip("_") or "default objective"
            ax.errorbar(
                t["D"],
                t[f"mlp_excess_risk_mean{suffix}"],
                yerr=t[f"mlp_excess_risk_sd{suffix}"].fillna(0),
                fmt="s-",
                color=color,
                capsize=3,
                label=f"MLP, {name} (ours)",
            )
        ax.semilogy(
            t["D"], t["paper_mlp_excess_risk"], "x--", color=COLORS["paper"], label="MLP (paper)"
        )
        ax.semilogy(
            t["D"],
            t["paper_truncation_excess_risk"],
            "+--",
            color=COLORS["paper"],
            label="truncation (paper)",
        )
        ax.set_xscale("log", base=2)
        ax.set_xticks(t["D"], [str(d) for d in t["D"]])
        ax.set_xlabel("representation dimension D")
        ax.set_ylabel("contrastive excess risk L(s) − L*")
        ax.set_title("Excess risk versus D")
        ax.legend(fontsize=8, ncol=2)
        _save(fig, path)


def plot_training_curves(metrics_paths, path) -> None:
    runs = [json.loads(open(p, encoding="utf-8").read()) for p in metrics_paths]
    objectives = sorted({r["objective"] for r in runs})
    dims = sorted({r["D"] for r in runs})
    first_seed = min(r["seed"] for r in runs)  # one legend entry per D
    cmap = plt.get_cmap("viridis")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1, len(objectives), figsize=(6.4 * len(objectives) / 1.4, 4.0), squeeze=False
        )
        for ax, objective in zip(axes[0], objectives, strict=True):
            for run in runs:
                if run["objective"] != objective:
                    continue
                hist = pd.DataFrame(run["history"])
                color = cmap(dims.index(run["D"]) / max(1, len(dims) - 1))
                label = f"D = {run['D']}" if run["seed"] == first_seed else None
                ax.semilogy(hist["epoch"], hist["excess_risk"], color=color, alpha=0.8, label=label)
            ax.set_title(f"objective: {objective}")
            ax.set_xlabel("epoch (checkpoint)")
            ax.set_ylabel("population excess risk")
            ax.legend(fontsize=8)
        fig.suptitle("Training curves (every seed)")
        _save(fig, path)


def plot_theory(table2_csv, path) -> None:
    t = pd.read_csv(table2_csv)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        styles = {"general": "-", "lcgm": "--"}
        for model, sub in t.groupby("model"):
            for col, marker in (
                ("anchor_size", "o"),
                ("target_size", "s"),
                ("pseudo_dimension", "^"),
            ):
                ax.loglog(
                    sub["eps"], sub[col], styles[model] + marker, ms=4, label=f"{model}: {col}"
                )
        ax.invert_xaxis()
        ax.set_xlabel("approximation error ε")
        ax.set_ylabel("size (up to constants and log factors)")
        row = t.iloc[0]
        ax.set_title(
            f"Table 2 rates: d1 = {row['d1']}, d2 = {row['d2']}, β = {row['beta']}, K = {row['K']}"
        )
        ax.legend(fontsize=7, ncol=2)
        _save(fig, path)
