"""Figures: each is drawn by its own plot rule from cached tables (a cosmetic change retrains
nothing). matplotlib with the Agg backend, one style for all, SVG output (inlined by the report)."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
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


def plot_lcgm_probes(table_csv, elbow_csv, path) -> None:
    """Probe R² and canonical-correlation capture versus D (K and the detected elbow marked), and
    the held-out InfoNCE excess on a second panel."""
    t = pd.read_csv(table_csv)
    elbows = pd.read_csv(elbow_csv).set_index("curve")
    k = int(elbows["K"].iloc[0])
    with plt.rc_context(STYLE):
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10.0, 4.0))
        for col, marker, color, label in (
            ("probe_r2_f", "o-", COLORS["ours"], "R²: f(x) → p(z|x)"),
            ("probe_r2_g", "s-", COLORS["samples"], "R²: g(y) → log p(z|y)/π"),
            ("cc_capture_g", "^:", COLORS["floor"], "Σρ²/K: g(y) vs log-ratios"),
        ):
            ax.errorbar(
                t["D"],
                t[f"{col}_mean"],
                yerr=t[f"{col}_sd"].fillna(0),
                fmt=marker,
                color=color,
                capsize=3,
                label=label,
            )
        for col, marker in (("paper_probe_r2_f", "x"), ("paper_probe_r2_g", "+")):
            ax.plot(t["D"], t[col], marker, ms=10, color=COLORS["paper"], label=f"{col} (paper)")
        d_elbow = int(elbows.loc["alignment_quality", "elbow_D"])
        ax.axvline(k, color="grey", ls="--", lw=1, label=f"K = {k}")
        ax.axvline(d_elbow, color=COLORS["paper"], ls=":", lw=1.5, label=f"elbow: D = {d_elbow}")
        ax.set_xlabel("representation dimension D")
        ax.set_ylabel("held-out probe quality")
        ax.set_ylim(0, 1.02)
        ax.set_title("LCGM: probes versus D")
        ax.legend(fontsize=7, loc="lower right")
        ax2.errorbar(
            t["D"],
            t["heldout_excess_mean"],
            yerr=t["heldout_excess_sd"].fillna(0),
            fmt="o-",
            color=COLORS["ours"],
            capsize=3,
        )
        ax2.axvline(k, color="grey", ls="--", lw=1)
        ax2.set_yscale("symlog", linthresh=1e-3)
        ax2.set_xlabel("representation dimension D")
        ax2.set_ylabel("held-out InfoNCE excess (vs τ·PMI)")
        ax2.set_title("LCGM: held-out excess versus D")
        _save(fig, path)


def plot_lcgm_cancorr(probe_paths, k: int, path) -> None:
    """The canonical correlations between g(y) and the K true log-ratio functions, per D (mean
    over seeds of the i-th largest)."""
    runs = [json.loads(open(p, encoding="utf-8").read()) for p in probe_paths]
    dims = sorted({r["D"] for r in runs})
    cmap = plt.get_cmap("viridis")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for i, d in enumerate(dims):
            cc = [r["cancorr_g"] for r in runs if r["D"] == d]
            n = min(len(c) for c in cc)
            mean = [sum(c[j] for c in cc) / len(cc) for j in range(n)]
            ax.plot(
                range(1, n + 1),
                mean,
                "o-",
                ms=3,
                color=cmap(i / max(1, len(dims) - 1)),
                label=f"D = {d}",
            )
        ax.axvline(k, color="grey", ls="--", lw=1, label=f"K = {k}")
        ax.set_xlabel("canonical pair i")
        ax.set_ylabel("canonical correlation ρ_i")
        ax.set_ylim(0, 1.02)
        ax.set_title("LCGM: g(y) versus the K log-ratio functions log p(z=k|y)/π_k")
        ax.legend(fontsize=7, ncol=2)
        _save(fig, path)


def plot_lcgm_features(feature_paths, dims, path) -> None:
    """The learned anchor features f(x) of held-out points, coloured by class: the raw coordinates
    for D = 2 (or the first two for larger D after PCA)."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(dims), figsize=(4.6 * len(dims), 4.2), squeeze=False)
        for ax, d, fpath in zip(axes[0], dims, feature_paths, strict=True):
            data = np.load(fpath)
            f, z = data["f"], data["z"]
            if f.shape[1] > 2:
                centred = f - f.mean(0)
                _, _, vt = np.linalg.svd(centred, full_matrices=False)
                xy, how = centred @ vt[:2].T, "first two principal components"
            else:
                xy, how = np.pad(f, ((0, 0), (0, 2 - f.shape[1]))), "raw coordinates"
            ax.scatter(xy[:, 0], xy[:, 1], c=z, cmap="tab10", s=4, alpha=0.6, rasterized=True)
            ax.set_title(f"f(x), D = {d}: {how}", fontsize=9)
            ax.set_xlabel("component 1")
            ax.set_ylabel("component 2")
        fig.suptitle("LCGM: learned anchor features of held-out points, coloured by class z")
        _save(fig, path)


def draw(kind: str, inputs, params, path) -> None:
    """The plot rules' entry point: ``kind`` names the figure."""
    if kind == "eigenvalues":
        plot_spectrum(inputs.eigenvalues, inputs.spectrum, path)
    elif kind == "excess":
        plot_excess(inputs.table1, path)
    elif kind == "training":
        plot_training_curves(inputs.metrics, path)
    elif kind == "theory":
        plot_theory(inputs.table2, path)
    elif kind == "lcgm_probes":
        plot_lcgm_probes(inputs.table, inputs.elbow, path)
    elif kind == "lcgm_cancorr":
        plot_lcgm_cancorr(inputs.probes, params.K, path)
    elif kind == "lcgm_features":
        plot_lcgm_features(inputs.features, params.dims, path)
    else:
        raise ValueError(f"unknown plot kind {kind!r}")
