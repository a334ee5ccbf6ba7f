"""Figures: each is drawn by its own plot rule from cached tables (a cosmetic change retrains
nothing). matplotlib with the Agg backend, one style for all, SVG output (inlined by the report)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from .experiments import (
    plot_calibration,
    plot_cosine,
    plot_lcgm_cancorr,
    plot_lcgm_features,
    plot_lcgm_probes,
    plot_noise_exponent,
)
from .style import COLORS, STYLE, _dim_axis, _mean_sd, _read_json, _save


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
            color=COLORS["floor"],
            label="tail Σ_{i>D} λ_i (at i = D+1), ours",
        )
        ax.set_xlabel("index i")
        ax.set_ylabel("eigenvalue of T*T")
        ax.set_title("Gaussian mixture: spectrum of the PMI operator")
        ax.legend()
        _save(fig, path)


def plot_excess(table1_csv, path) -> None:
    table = pd.read_csv(table1_csv)
    objectives = list(dict.fromkeys(table["objective"]))  # the default objective first
    t = table[table["objective"] == objectives[0]]  # the spectral columns: one row per D
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for col, style, color, label in (
            ("spectral_tail", "^:", "grey", "spectral tail"),
            ("truncation_excess_risk", "o-", COLORS["ours"], "truncation (ours)"),
            ("rank_d_floor_excess_risk", "v-", COLORS["floor"], "rank-D floor (ours)"),
        ):
            ax.semilogy(t["D"], t[col], style, color=color, label=label)
        for objective, color in zip(objectives, ("#9467bd", COLORS["samples"]), strict=False):
            sub = table[table["objective"] == objective]
            _mean_sd(
                ax,
                sub["D"],
                sub,
                "mlp_excess_risk_mean",
                "mlp_excess_risk_sd",
                "s-",
                color=color,
                label=f"MLP, {objective} (ours)",
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
        _dim_axis(ax, t["D"])
        ax.set_ylabel("contrastive excess risk L(s) − L*")
        ax.set_title("Excess risk versus D")
        ax.legend(fontsize=8, ncol=2)
        _save(fig, path)


def plot_training_curves(metrics_paths, path) -> None:
    runs = _read_json(metrics_paths)
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


def _sample_size(inputs, params, path) -> None:
    from .study import plot_sample_size

    plot_sample_size(inputs.table, inputs.fits, path)


def _widths(inputs, params, path) -> None:
    from .widths import plot_widths

    plot_widths(inputs.table, inputs.fits, path, inputs.eps, inputs.floors)


def _smoothness(inputs, params, path) -> None:
    from .smoothness import plot_smoothness

    plot_smoothness(inputs.curves, inputs.eps, inputs.trained, path)


def _digits(inputs, path) -> None:
    from .digits import plot_digits

    plot_digits(inputs, path)


#: each plot rule's figure: params.kind → the function drawing it from the rule's inputs
FIGURES = {
    "eigenvalues": lambda i, p, path: plot_spectrum(i.eigenvalues, i.spectrum, path),
    "excess": lambda i, p, path: plot_excess(i.table1, path),
    "training": lambda i, p, path: plot_training_curves(i.metrics, path),
    "theory": lambda i, p, path: plot_theory(i.table2, path),
    "lcgm_probes": lambda i, p, path: plot_lcgm_probes(i.table, i.elbow, path),
    "lcgm_cancorr": lambda i, p, path: plot_lcgm_cancorr(i.probes, p.K, path),
    "lcgm_features": lambda i, p, path: plot_lcgm_features(i.features, p.dims, path),
    "noise_exponent": lambda i, p, path: plot_noise_exponent(i.table, i.curve, path),
    "calibration": lambda i, p, path: plot_calibration(i.points, i.table, path),
    "cosine": lambda i, p, path: plot_cosine(i.table, path),
    "sample_size": _sample_size,
    "digits": lambda i, p, path: _digits(i, path),
    "widths": _widths,
    "smoothness": _smoothness,
}


def _dynamics(kind):
    def figure(inputs, params, path):
        from . import dynamics

        if kind == "order":
            dynamics.plot_dynamics_order(inputs.table, path)
        elif kind == "lcgm":
            dynamics.plot_dynamics_lcgm(inputs.steps, inputs.table, path)
        else:
            getattr(dynamics, f"plot_dynamics_{kind}")(inputs.steps, path)

    return figure


FIGURES |= {f"dynamics_{k}": _dynamics(k) for k in ("alignment", "directions", "order", "lcgm")}


def draw(kind: str, inputs, params, path) -> None:
    """The plot rules' entry point: ``kind`` names the figure."""
    if kind not in FIGURES:
        raise ValueError(f"unknown plot kind {kind!r}; known: {sorted(FIGURES)}")
    FIGURES[kind](inputs, params, path)
