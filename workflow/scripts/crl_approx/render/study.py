"""The report section "Where the sampled protocol's error goes": every sentence computed from
results/tables/sample_size.csv and sample_size_fits.csv."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics import tiers
from .numbers import pct
from .verdicts import fmt, fmt_sd, mean_sd


def _pm(r, col) -> str:
    sd = r.get(f"{col}_sd")
    return mean_sd(r[f"{col}_mean"], None if pd.isna(sd) else float(sd), fmt, fmt_sd)


def _multiple(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return "never (∞)" if math.isinf(x) else f"{x:.3g}×"


def budget_unresolved(value, lo, hi) -> str | None:
    """Why an extrapolated budget multiple is not resolved, or None: its interval reaches below 1×
    (the measured excess is above the band, so a budget under 1× contradicts it) or is wider than
    the tiers' tolerance allows (:func:`..numerics.tiers.interval_tier`: a wide interval contains
    anything, an interval open to ∞ too; issue 26, finding 8). The report's table and README's
    text both read it (README's template had its own copy, which alone treated ∞ as wide)."""
    from ..numerics.tiers import CLOSE_TOLERANCE

    if not math.isfinite(value):
        return None
    if lo < 1:
        return "the interval reaches below 1×, where the measured excess lies above the band"
    if not math.isfinite(hi) or (hi - lo) / 2 > CLOSE_TOLERANCE * value:
        width = pct(CLOSE_TOLERANCE)
        return f"the interval is wider than ±{width}, as the tiers treat a wide interval"
    return None


def _budget(value, lo, hi) -> str:
    """The extrapolated budget multiple, or "not resolved" (:func:`budget_unresolved`)."""
    if budget_unresolved(value, lo, hi):
        return f"not resolved ({_multiple(value)}, interval too wide)"
    return _multiple(value)


def cell(table, dim: int, protocol: str, budget: int = 1, lr: float | None = None):
    """One cell of the sample-size table: its D, protocol, budget multiple and learning rate
    (None: the default one)."""
    sel = (table["D"] == dim) & (table["protocol"] == protocol)
    sel &= table["budget_multiplier"] == budget
    sel &= table["is_default_lr"].astype(bool) if lr is None else np.isclose(table["lr"], lr)
    return table[sel].iloc[0]


def lr_ratios(table) -> list[float]:
    """Each other-learning-rate cell's excess over the fresh stream's at the default rate, same D
    (1× budget), in the table's order."""
    other = table[~table["is_default_lr"].astype(bool)]
    return [
        float(r["mlp_excess_risk_mean"] / cell(table, r["D"], "fresh")["mlp_excess_risk_mean"])
        for _, r in other.iterrows()
    ]


def _lack(f) -> str:
    """The fit's check: residual rms in log y (with its degrees of freedom) and the shape test."""
    parts = []
    if math.isfinite(f["rms_log_residual"]):
        parts.append(f"rms log residual {f['rms_log_residual']:.3f} ({int(f['dof'])} dof)")
    elif f["x"] != "pool_size" or "local" not in f["fit"]:
        parts.append("exact (no residual dof)")
    if isinstance(f["shape_test"], str) and f["shape_test"]:
        parts.append(f"one law {f['shape_test']}")
    return "; ".join(parts) or "two points (a local slope)"


def _interval(lo, hi, f="{:.3g}") -> str:
    if math.isnan(lo) and math.isinf(hi):
        return "[—, ∞] (a seed never reaches)"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "—"
    return f"[{f.format(lo)}, {f.format(hi)}]"


def _tier(r) -> str:
    """A study cell's tier against the paper, from its numbers (the tier its verdict printed)."""
    return tiers.scale_tier(
        r.mlp_excess_risk_mean, r.paper_mlp_excess_risk, r.mlp_excess_risk_sd, n=r.n_seeds
    )


def _unresolved(r) -> bool:
    return _tier(r) == tiers.UNRESOLVED


def _css(r) -> str:
    """match where the cell reaches the paper, order where the seeds cannot tell, else differs
    (the study reads "reaches", not the tiers' degrees of missing)."""
    tier = _tier(r)
    return "match" if tiers.reaches(tier) else "order" if tier == tiers.UNRESOLVED else "differs"


def context(table_csv, fits_csv, default_objective: str) -> dict:
    t = pd.read_csv(table_csv)
    fits = pd.read_csv(fits_csv)
    main = t[t["is_default_lr"] & (t["budget_multiplier"] == 1)]
    protocols = list(dict.fromkeys(main.sort_values("distinct_pairs")["protocol"]))
    rows, words = [], []
    for dim, sub in main.groupby("D"):
        first = sub.iloc[0]
        by = {r["protocol"]: r for _, r in sub.iterrows()}
        rows.append(
            {
                "D": int(dim),
                "floor": fmt(first["approximation"]),
                "population": _pm(first, "population"),
                "cells": [
                    {
                        "ours": _pm(by[p], "mlp_excess_risk"),
                        "sampling": _pm(by[p], "sampling"),
                        "verdict": by[p]["verdict"],
                        "css": _css(by[p]),
                    }
                    if p in by
                    else None
                    for p in protocols
                ],
                "paper": fmt(first["paper_mlp_excess_risk"]),
            }
        )
        best = sub.loc[sub["mlp_excess_risk_mean"].idxmin()]
        words.append(
            f"D = {int(dim)}: approximation (the rank-D floor) {fmt(first['approximation'])}; "
            f"network + optimisation {fmt(first['network_mean'])} (the population-trained MLP "
            f"at {fmt(first['population_mean'])}, {int(first['population_steps'])} full-batch "
            f"steps); the best sampled protocol at the paper's budget, {best['protocol']} "
            f"({int(best['steps'])} minibatch steps), adds {fmt(best['sampling_mean'])} of "
            f"sampling + optimisation-path difference "
            f"({best['sampling_share']:.1%} of its excess {fmt(best['mlp_excess_risk_mean'])})"
            + (
                f", {best['ratio_to_paper']:.4g}× the paper's "
                f"{fmt(first['paper_mlp_excess_risk'])}."
                if math.isfinite(float(best["ratio_to_paper"]))
                else " (the paper reports no value at this D)."
            )
        )
    reaching = [
        p
        for p in protocols
        if main[main["protocol"] == p]["reaches_paper"].all()
        and main[main["protocol"] == p]["D"].nunique() == main["D"].nunique()
    ]
    missing = {
        p: [
            f"{int(r.D)}" + (" (our seeds cannot tell)" if _unresolved(r) else "")
            for r in main[(main["protocol"] == p) & ~main["reaches_paper"]].itertuples()
        ]
        for p in protocols
    }
    fit_rows = []
    for _, f in fits.iterrows():
        seeds = "" if pd.isna(f["n_seeds"]) else f"; {int(f['n_seeds'])} seeds"
        extra = f" ({int(f['n_excluded'])} excluded: value ≤ 0)" if f["n_excluded"] else ""
        reach = "" if pd.isna(f["n_seeds_reaching"]) else f" ({int(f['n_seeds_reaching'])}"
        reach += f" of {int(f['n_seeds'])} seeds' extrapolations cross the band)" if reach else ""
        fit_rows.append(
            {
                "D": int(f["D"]),
                "fit": f["fit"],
                "x": f["x_values"],
                "regime": f["regime"],
                "exponent": f"{f['exponent']:.3f}" if math.isfinite(f["exponent"]) else "—",
                "ci": _interval(f["exponent_lo"], f["exponent_hi"], "{:.3f}"),
                "lack": _lack(f),
                "theory": f["theory_verdict"],
                "points": f"{int(f['n_points'])}{extra}{seeds}",
                "budget": _budget(
                    f["budget_to_band"], f["budget_to_band_lo"], f["budget_to_band_hi"]
                )
                + reach
                if math.isfinite(f["reach_target"])
                else "",
                "budget_ci": _interval(f["budget_to_band_lo"], f["budget_to_band_hi"])
                if math.isfinite(f["reach_target"])
                else "",
            }
        )
    lr_rows = []
    others = t[~t["is_default_lr"]]
    for _, r in others.iterrows():
        ref = t[
            t["is_default_lr"]
            & (t["D"] == r["D"])
            & (t["protocol"] == r["protocol"])
            & (t["budget_multiplier"] == 1)
        ]
        ref_mean = float(ref["mlp_excess_risk_mean"].iloc[0]) if len(ref) else math.nan
        lr_rows.append(
            {
                "D": int(r["D"]),
                "protocol": r["protocol"],
                "lr": f"{r['lr']:g}",
                "ours": _pm(r, "mlp_excess_risk"),
                "ref": fmt(ref_mean),
                "change": f"{r['mlp_excess_risk_mean'] / ref_mean:.3g}×"
                if math.isfinite(ref_mean)
                else "—",
                "verdict": r["verdict"],
                "css": _css(r),
            }
        )
    lr_reaching = sorted(
        {(int(r["D"]), r["protocol"]) for _, r in others.iterrows() if r["reaches_paper"]}
    )
    lr_unresolved = sorted(
        {(int(r["D"]), r["protocol"]) for _, r in others.iterrows() if _unresolved(r)}
    )
    return {
        "protocols": protocols,
        "rows": rows,
        "words": words,
        "fits": fit_rows,
        "lr_rows": lr_rows,
        "lr_reaching": [f"{p} at D = {d}" for d, p in lr_reaching],
        "lr_unresolved": [f"{p} at D = {d}" for d, p in lr_unresolved],
        "reaching": reaching,
        "missing": {p: ds for p, ds in missing.items() if ds},
        "default_objective": default_objective,
        "budget_steps": int(main["steps"].iloc[0]),
        "population_steps": int(main["population_steps"].iloc[0]),
        "lr0": f"{main['lr'].iloc[0]:g}",
    }
