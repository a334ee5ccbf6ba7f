"""The figures of Experiments 3 and 4, calibration and the cosine ablation (one plot rule each;
dispatched by :func:`crl_approx.figures.draw.draw`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..integrity import load_npz
from .style import COLORS, STYLE, _dim_axis, _mean_sd, _read_json, _save


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
            _mean_sd(ax, t["D"], t, f"{col}_mean", f"{col}_sd", marker, color=color, label=label)
        for col, marker, label in (
            ("paper_probe_r2_f", "x", "paper: R², f"),
            ("paper_probe_r2_g", "+", "paper: R², g"),
        ):
            ax.plot(t["D"], t[col], marker, ms=10, color=COLORS["paper"], label=label)
        d_elbow = elbows.loc["alignment_quality", "elbow_D"]
        ax.axvline(k, color="grey", ls="--", lw=1, label=f"K = {k}")
        if np.isfinite(d_elbow):  # NaN: the curve never stays in its band
            label = f"elbow: D = {int(d_elbow)}"
            ax.axvline(d_elbow, color=COLORS["paper"], ls=":", lw=1.5, label=label)
        ax.set_xlabel("representation dimension D")
        ax.set_ylabel("held-out probe quality")
        ax.set_ylim(0, 1.02)
        ax.set_title("LCGM: probes versus D")
        ax.legend(fontsize=7, loc="lower right")
        _mean_sd(
            ax2, t["D"], t, "heldout_excess_mean", "heldout_excess_sd", "o-", color=COLORS["ours"]
        )
        ax2.axvline(k, color="grey", ls="--", lw=1)
        if (t["heldout_excess_mean"] > 0).all():
            ax2.set_yscale("log")
        else:  # a Monte Carlo excess can dip below 0 when a model is within sampling error
            ax2.set_yscale("symlog", linthresh=1e-3)
        ax2.set_xlabel("representation dimension D")
        ax2.set_ylabel("held-out InfoNCE excess (vs τ·PMI)")
        ax2.set_title("LCGM: held-out excess versus D")
        _save(fig, path)


def plot_lcgm_cancorr(probe_paths, k: int, path) -> None:
    """The canonical correlations between g(y) and the K true log-ratio functions, per D (mean
    over seeds of the i-th largest)."""
    runs = _read_json(probe_paths)
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
            data = load_npz(fpath)
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


def plot_noise_exponent(table_csv, curve_csv, path) -> None:
    """Left: P(|Δ| ≤ t) (pooled over seeds, bootstrap band) with the fit window and, for the
    mixture, the small-t asymptotics. Right: the local slope versus t, the asymptotic slope
    1 − 1/(log(1/t) + C₀), μ̂ on the window and the paper's value."""
    table = pd.read_csv(table_csv)
    curve = pd.read_csv(curve_csv)
    pooled = table[table["seed"] == -1].set_index("dataset")
    colors = {"gmm": COLORS["ours"], "lcgm": COLORS["samples"]}
    with plt.rc_context(STYLE):
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11.0, 4.2))
        for dataset, sub in curve.groupby("dataset", sort=False):
            sub = sub[sub["reliable"]]
            row = pooled.loc[dataset]
            color = colors.get(dataset, "grey")
            ax.loglog(
                sub["t"], sub["probability"], "-", color=color, label=f"{dataset} (Monte Carlo)"
            )
            ax.fill_between(
                sub["t"], sub["probability_lo"], sub["probability_hi"], color=color, alpha=0.25
            )
            ax2.semilogx(
                sub["t"], sub["local_slope"], "-", color=color, label=f"{dataset}: local slope"
            )
            ax2.fill_between(
                sub["t"], sub["local_slope_lo"], sub["local_slope_hi"], color=color, alpha=0.25
            )
            ax2.hlines(
                row["mu_hat"],
                row["window_lo"],
                row["window_hi"],
                color=color,
                lw=3,
                label=f"{dataset}: μ̂ = {row['mu_hat']:.4f} on the window",
            )
            if "asymptotic_probability" in sub and sub["asymptotic_probability"].notna().any():
                ax.loglog(
                    sub["t"],
                    sub["asymptotic_probability"],
                    "--",
                    color="black",
                    lw=1,
                    label=f"c·t·(log(1/t) + C₀), c = {row['asymptotic_c']:.3f}, "
                    f"C₀ = {row['asymptotic_C0']:.3f}",
                )
                ax2.semilogx(
                    sub["t"],
                    sub["asymptotic_slope"],
                    "--",
                    color="black",
                    lw=1,
                    label="1 − 1/(log(1/t) + C₀)",
                )
            if "paper_mu_hat" in row and pd.notna(row.get("paper_mu_hat")):
                paper_mu = row["paper_mu_hat"]  # from paper_values.yaml, through the table
                label = f"paper: μ̂ = {paper_mu:.4f}"
                ax2.axhline(paper_mu, color=COLORS["paper"], ls=":", label=label)
        lo, hi = pooled["window_lo"].iloc[0], pooled["window_hi"].iloc[0]
        for a in (ax, ax2):
            a.axvspan(lo, hi, color="grey", alpha=0.12, lw=0)
            a.set_xlabel("t")
        ax.set_ylabel("P(|r(x,y) − r(x,y′)| ≤ t)")
        ax.set_title(f"Noise condition (fit window [{lo:g}, {hi:g}] shaded)")
        ax.legend(fontsize=7)
        ax2.set_ylabel("d log P / d log t")
        ax2.set_ylim(0.3, 1.3)
        ax2.set_title("Local log-log slope: μ̂ depends on the window")
        ax2.legend(fontsize=7, loc="lower left")
        _save(fig, path)


def plot_calibration(points_csv, table_csv, path) -> None:
    """Retrieval excess against contrastive excess, log-log, with the fitted line and reference
    slopes 1/2 and (μ̂+1)/(μ̂+2) through the points' centre."""
    p = pd.read_csv(points_csv)
    t = pd.read_csv(table_csv).set_index("group")
    usable = (p["contrastive_excess"] > 0) & (p["retrieval_excess"] > 0)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.8, 4.8))
        markers = {"inner": "o", "cosine": "^"}
        cmap = plt.get_cmap("viridis")
        dims = sorted(p["D"][p["source"] == "checkpoint"].unique())
        for (score, d), sub in p[usable & (p["source"] == "checkpoint")].groupby(["score", "D"]):
            ax.loglog(
                sub["contrastive_excess"],
                sub["retrieval_excess"],
                markers.get(score, "s"),
                ms=3,
                alpha=0.5,
                color=cmap(dims.index(d) / max(1, len(dims) - 1)),
                label=f"checkpoints, {score}, D = {d}",
            )
        tr = p[usable & (p["source"] == "truncation")]
        ax.loglog(
            tr["contrastive_excess"], tr["retrieval_excess"], "kx", ms=6, label="rank-D truncations"
        )
        fit = t.loc["all"]
        xs = np.geomspace(
            p.loc[usable, "contrastive_excess"].min(), p.loc[usable, "contrastive_excess"].max(), 50
        )
        ax.loglog(
            xs,
            np.exp(fit["intercept"]) * xs ** fit["exponent"],
            "-",
            color=COLORS["paper"],
            label=f"fit: κ̂ = {fit['exponent']:.3f} [{fit['exponent_ci_lo']:.3f}, "
            f"{fit['exponent_ci_hi']:.3f}]",
        )
        lx = np.log(p.loc[usable, "contrastive_excess"]).mean()
        ly = np.log(p.loc[usable, "retrieval_excess"]).mean()
        refs = [(0.5, ":", "slope 1/2 (distribution-free)")]
        if pd.notna(fit["noise_rate"]):
            refs.append((fit["noise_rate"], "--", f"slope (μ̂+1)/(μ̂+2) = {fit['noise_rate']:.3f}"))
        for slope, style, label in refs:
            ax.loglog(xs, np.exp(ly + slope * (np.log(xs) - lx)), style, color="grey", label=label)
        ax.set_xlabel("contrastive excess L(s) − L*")
        ax.set_ylabel("retrieval excess E(s) − E*")
        ax.set_title("Measured calibration (Gaussian mixture, quadrature)")
        ax.legend(fontsize=6, ncol=2)
        _save(fig, path)


def plot_cosine(table_csv, path) -> None:
    """Excess risk and L2 distance versus D, inner-product against cosine scores."""
    t = pd.read_csv(table_csv)
    scores = [
        c[len("mlp_excess_risk_mean_") :]
        for c in t.columns
        if c.startswith("mlp_excess_risk_mean_")
    ]
    colors = {"inner": COLORS["ours"], "cosine": COLORS["samples"]}
    with plt.rc_context(STYLE):
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10.0, 4.0))
        for metric, a, ylabel in (
            ("mlp_excess_risk", ax, "excess risk L(s) − L*"),
            ("mlp_l2_distance", ax2, "squared L2 distance to PMI (self-normalised)"),
        ):
            for score in scores:
                _mean_sd(
                    a,
                    t["D"],
                    t,
                    f"{metric}_mean_{score}",
                    f"{metric}_sd_{score}",
                    "o-",
                    color=colors.get(score, "grey"),
                    label=f"{score} score",
                )
            a.set_yscale("log")
            _dim_axis(a, t["D"])
            a.set_ylabel(ylabel)
        ax.semilogy(
            t["D"],
            t["rank_d_floor_excess_risk"],
            "v--",
            color=COLORS["floor"],
            label="best rank-D (inner)",
        )
        ax.semilogy(
            t["D"], t["truncation_excess_risk"], "+:", color="grey", label="rank-D truncation"
        )
        ax.set_title("Cosine versus inner-product scores: excess")
        ax2.set_title("… and L2 distance")
        ax.legend(fontsize=8)
        _save(fig, path)
