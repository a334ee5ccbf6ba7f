"""The report's section contexts for Table 2, the LCGM, the noise exponent, calibration and the
cosine ablation: what each section prints, read from its tables."""

from __future__ import annotations

import json
import math

import pandas as pd

from ..integrity import FIELD
from ..numerics import tiers
from ..numerics.theory import FORMULAS
from .verdicts import fmt, fmt_sd, mean_sd


def _num(row, col):
    value = row.get(col)
    return None if value is None or pd.isna(value) else float(value)


def _elbow(elbows: pd.DataFrame, curve: str):
    """A curve's elbow D, or None where the curve never stays in its band."""
    value = elbows.set_index("curve").loc[curve, "elbow_D"]
    return None if pd.isna(value) else int(value)


def _saturation(elbows: pd.DataFrame, curve: str) -> dict | None:
    """A curve's saturation point, status and convergence, where the table has them."""
    if "saturation" not in elbows:
        return None
    r = elbows.set_index("curve").loc[curve]
    return {
        "label": r["saturation"],
        "status": r["saturation_status"],
        "verdict": r["saturation_verdict"],
        "converged": r["converged"],
    }


def lcgm_context(table_csv, elbow_csv, design_json, paper: dict) -> dict:
    """The LCGM section: design check, probe rows per D, the paper's R² at D = K, elbows."""
    t = pd.read_csv(table_csv)
    elbows = pd.read_csv(elbow_csv)
    with open(design_json, encoding="utf-8") as fh:
        design = json.load(fh)
    design.pop(FIELD, None)  # its provenance (the readme reads results from anywhere)

    def pm(r, col, f="{:.4f}"):
        return mean_sd(_num(r, f"{col}_mean"), _num(r, f"{col}_sd"), f.format)

    rows = []
    for _, r in t.iterrows():
        row = {
            "D": int(r["D"]),
            "is_K": bool(r["is_K"]),
            "r2_f": pm(r, "probe_r2_f"),
            "r2_g": pm(r, "probe_r2_g"),
            "cc_g": pm(r, "cc_capture_g"),
            "cc_f": pm(r, "cc_capture_f"),
            "excess": pm(r, "heldout_excess", "{:.2e}"),
            "n": int(r["n_seeds"]),
        }
        rows.append(row)
    at_k = t[t["is_K"]]
    comparison = []
    if len(at_k) and paper["K"] == int(design["K"]):
        r = at_k.iloc[0]
        for key, label in (("probe_r2_f", "f(x) → p(z|x)"), ("probe_r2_g", "g(y) → log p(z|y)/π")):
            ours, sd, theirs = _num(r, f"{key}_mean"), _num(r, f"{key}_sd"), _num(r, f"paper_{key}")
            text = tiers.bounded_tier(ours, theirs, paper["printed_decimals"])
            css = tiers.css(text)
            comparison.append(
                {
                    "key": key,
                    "probe": label,
                    "ours": mean_sd(ours, sd, "{:.4f}".format),
                    "paper": "—" if theirs is None else f"{theirs:g}",
                    "diff": "—" if theirs is None else f"{ours - theirs:+.4f}",
                    "verdict": text,
                    "css": css,
                }
            )
    return {
        "rows": rows,
        "comparison": comparison,
        "elbows": elbows.to_dict("records"),
        "elbow": _elbow(elbows, "alignment_quality"),
        "excess_elbow": _elbow(elbows, "heldout_excess"),
        # the saturation rule of 2026-12-01 (absent from tables written before it)
        "saturation": _saturation(elbows, "alignment_quality"),
        "K": int(design["K"]),
        "paper_K": paper["K"],
        "design": design,
        "fraction": float(elbows["fraction"].iloc[0]),
    }


def noise_context(t: pd.DataFrame, paper: dict, level: float = 0.95) -> dict:
    """The noise-exponent section: per-seed and pooled fits per dataset (the noise table); the
    paper's μ̂ judged by our ``level`` interval (:func:`crl_approx.numerics.tiers.interval_tier`)."""
    rows = []
    for _, r in t.iterrows():
        is_pooled = int(r["seed"]) == -1
        row = {
            "dataset": r["dataset"],
            "seed": int(r["seed"]),
            "sample": r["sample"],
            "pooled": is_pooled,
            "n": f"{int(r['n_samples']):,}",
            "mu": f"{r['mu_hat']:.4f}",
            "ci": f"[{r['mu_ci_lo']:.4f}, {r['mu_ci_hi']:.4f}]",
            "rate": f"{r['rate_exponent']:.4f}",
            "rate_ci": f"[{r['rate_exponent_ci_lo']:.4f}, {r['rate_exponent_ci_hi']:.4f}]",
            "sd": "—" if pd.isna(r.get("mu_hat_seed_sd")) else f"{r['mu_hat_seed_sd']:.4f}",
        }
        if is_pooled and r["dataset"] == "gmm" and paper["mu_hat"] is not None:
            label = tiers.interval_tier(paper["mu_hat"], r["mu_ci_lo"], r["mu_ci_hi"], level)
            css = tiers.css(label)
            inside = r["mu_ci_lo"] <= paper["mu_hat"] <= r["mu_ci_hi"]
            row["paper"] = {
                "mu": f"{paper['mu_hat']:.6f}",
                "rate": f"{paper['rate_exponent']:.4f}",
                "diff": f"{r['mu_hat'] - paper['mu_hat']:+.4f}",
                "verdict": label,
                "css": css,
                "inside": bool(inside),
            }
        rows.append(row)
    gmm = t[(t["dataset"] == "gmm") & (t["seed"] == -1)]
    asym = None
    if len(gmm) and "asymptotic_c" in gmm:
        g = gmm.iloc[0]
        asym = {
            "c": f"{g['asymptotic_c']:.4f}",
            "C0": f"{g['asymptotic_C0']:.4f}",
            "alpha": f"{g['asymptotic_alpha']:.4f}",
            "beta": f"{g['asymptotic_beta']:.4f}",
            "window_slope": f"{g['asymptotic_window_slope']:.4f}",
            "max_dev": f"{100 * g['asymptotic_max_rel_dev_in_window']:.1f}",
            "warnings": int(g["asymptotic_quadrature_warnings"]),
        }
    first = t.iloc[0]
    return {
        "rows": rows,
        "paper_row": next((r for r in rows if "paper" in r), None),
        "asym": asym,
        "window": f"[{first['window_lo']:g}, {first['window_hi']:g}]",
        "scheme": first["scheme"],
    }


def low_d_spread(points: pd.DataFrame, dim: int = 1) -> dict | None:
    """Where the D = ``dim`` training checkpoints sit: the range of their contrastive excess and
    the decades their retrieval excess spans (positive values), from the calibration points."""
    sel = points[(points["source"] == "checkpoint") & (points["D"] == dim)]
    ce, re = sel["contrastive_excess"], sel["retrieval_excess"]
    re = re[re > 0]
    if len(sel) < 2 or len(re) < 2:
        return None
    return {
        "D": dim,
        "n": len(sel),
        "ce_lo": f"{ce.min():.2g}",
        "ce_hi": f"{ce.max():.2g}",
        "ce_decades": f"{math.log10(ce.max() / ce.min()):.1f}",
        "re_decades": f"{math.log10(re.max() / re.min()):.1f}",
    }


def calibration_context(table_csv, points_csv=None) -> dict:
    t = pd.read_csv(table_csv)
    rows = []
    for _, r in t.iterrows():
        rows.append(
            {
                "group": r["group"],
                "n": int(r["n_points"]),
                "excluded": int(r["n_excluded"]),
                "exponent": f"{r['exponent']:.3f}",
                "ci": f"[{r['exponent_ci_lo']:.3f}, {r['exponent_ci_hi']:.3f}]",
                "noise_rate": "—" if pd.isna(r["noise_rate"]) else f"{r['noise_rate']:.3f}",
                "c_half": f"{r['max_ratio_to_bound']:.3g}",
                "c_noise": "—"
                if pd.isna(r.get("max_ratio_to_noise_bound"))
                else f"{r['max_ratio_to_noise_bound']:.3g}",
                "above_half": bool(r["exponent_ci_lo"] > 0.5),
            }
        )
    spread = None if points_csv is None else low_d_spread(pd.read_csv(points_csv))
    return {"rows": rows, "spread": spread}


def cosine_context(table_csv) -> dict:
    t = pd.read_csv(table_csv)
    rows = []
    for _, r in t.iterrows():

        def pm(col, r=r):
            return mean_sd(_num(r, col), _num(r, col.replace("_mean_", "_sd_")), fmt, fmt_sd)

        rows.append(
            {
                "D": int(r["D"]),
                "excess_inner": pm("mlp_excess_risk_mean_inner"),
                "excess_cosine": pm("mlp_excess_risk_mean_cosine"),
                "l2_inner": pm("mlp_l2_distance_mean_inner"),
                "l2_cosine": pm("mlp_l2_distance_mean_cosine"),
                "ratio": f"{r['mlp_excess_risk_cosine_over_inner']:.3g}",
                "floor": fmt(_num(r, "rank_d_floor_excess_risk")),
                "scale": "—"
                if pd.isna(r.get("cosine_scale_mean"))
                else f"{r['cosine_scale_mean']:.3f}",
            }
        )
    return {"rows": rows}


def table2(table: pd.DataFrame) -> dict:
    models = {}
    for model, sub in table.groupby("model", sort=False):
        models[model] = {
            "formulas": FORMULAS[model],
            "rows": [
                {
                    "eps": f"{r['eps']:g}",
                    "D": f"{r['D']:.3g}",
                    "anchor": f"{r['anchor_size']:.3g}",
                    "target": f"{r['target_size']:.3g}",
                    "pd": f"{r['pseudo_dimension']:.3g}",
                }
                for _, r in sub.iterrows()
            ],
        }
    first = table.iloc[0]
    return {
        "models": models,
        "d1": int(first["d1"]),
        "d2": int(first["d2"]),
        "beta": first["beta"],
        "K": int(first["K"]),
    }
