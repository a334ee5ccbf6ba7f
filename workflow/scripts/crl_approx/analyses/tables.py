"""Assembling the paper's tables from the rules' outputs, with the paper's values beside ours."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..config import load_paper_values
from ..numerics.stats import summarise
from ..runtime import write_csv

log = logging.getLogger(__name__)

#: the paper's Table 1 columns that we reproduce, by our column name
TABLE1_PAPER_COLUMNS = (
    "spectral_tail",
    "truncation_excess_risk",
    "mlp_l2_distance",
    "mlp_excess_risk",
)
MLP_METRICS = ("mlp_l2_distance", "mlp_excess_risk")


def load_runs(paths) -> pd.DataFrame:
    """One row per training run (its metrics JSON without the per-epoch history)."""
    from ..integrity import load_json

    rows = []
    for path in paths:
        metrics = load_json(path)
        metrics.pop("history", None)
        rows.append(metrics)
    return pd.DataFrame(rows).sort_values(["objective", "D", "seed"], ignore_index=True)


def table1(
    spectrum: pd.DataFrame,
    floor: pd.DataFrame,
    runs: pd.DataFrame,
    paper: dict,
    objectives,
    default_objective: str,
) -> pd.DataFrame:
    """Table 1: one row per (objective, D), the default objective first. The spectral columns
    (no training involved) repeat on every objective's rows; ours, the paper's and ours/paper."""
    base = spectrum[["D", "spectral_tail", "truncation_excess_risk"]].merge(
        floor[["D", "rank_d_floor_excess_risk"]], on="D", how="left"
    )
    paper_df = pd.DataFrame(paper["table1"]).set_index("D").astype(float)  # None: not the setting
    for col in TABLE1_PAPER_COLUMNS:
        base[f"paper_{col}"] = base["D"].map(paper_df[col])
    for col in ("spectral_tail", "truncation_excess_risk"):
        base[f"ratio_{col}"] = base[col] / base[f"paper_{col}"]
    ordered = [default_objective] + [o for o in objectives if o != default_objective]
    mlp = summarise(runs[runs["objective"].isin(ordered)], ["objective", "D"], MLP_METRICS)
    out = pd.DataFrame({"objective": ordered}).merge(base, how="cross")
    out = out.merge(mlp, on=["objective", "D"], how="left")
    out.insert(1, "is_default", out["objective"] == default_objective)
    for metric in MLP_METRICS:
        out[f"ratio_{metric}"] = out[f"{metric}_mean"] / out[f"paper_{metric}"]
    # how far above the best achievable rank-D excess the trained MLPs sit
    out["mlp_excess_over_floor"] = out["mlp_excess_risk_mean"] / out["rank_d_floor_excess_risk"]
    # why a paper column is empty: the settings of paper_values.yaml that the run does not share
    differs = paper.get("differs", {})
    out["paper_note"] = "; ".join(
        f"{name}: {', '.join(keys)} differ" for name, keys in differs.items() if "table1" in name
    )
    return out


def run_table1(inputs, objectives, default_objective, output, setting=None) -> pd.DataFrame:
    """The ``assemble_table1`` rule."""
    runs = load_runs(inputs.metrics)
    table = table1(
        pd.read_csv(inputs.spectrum),
        pd.read_csv(inputs.floor),
        runs,
        load_paper_values(inputs.paper, setting),
        objectives,
        default_objective,
    )
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        log.info("Table 1 (default objective %s):\n%s", default_objective, table.T)
    if not np.isfinite(table[["spectral_tail", "truncation_excess_risk"]].to_numpy()).all():
        raise ValueError("Table 1 has non-finite spectral columns")
    write_csv(runs, output.runs)
    write_csv(table, output.table)
    return table


def cosine_table(runs: pd.DataFrame, spectrum: pd.DataFrame, floor: pd.DataFrame, scores):
    """The ablation: per D, each score's excess risk and L2 distance (mean, sd over seeds), the
    learned cosine scale, and the spectral references (truncation, best rank-D)."""
    out = spectrum[["D", "truncation_excess_risk", "l2_truncation_error"]].merge(
        floor[["D", "rank_d_floor_excess_risk"]], on="D"
    )
    for score in scores:
        sub = runs[runs["score"] == score]
        agg = summarise(sub, "D", MLP_METRICS).set_index("D").add_suffix(f"_{score}")
        if score == "cosine" and "cosine_scale" in sub:
            agg["cosine_scale_mean"] = sub.groupby("D")["cosine_scale"].mean()
        out = out.merge(agg.reset_index(), on="D", how="right")
    if {"inner", "cosine"} <= set(scores):
        for metric in MLP_METRICS:
            out[f"{metric}_cosine_over_inner"] = (
                out[f"{metric}_mean_cosine"] / out[f"{metric}_mean_inner"]
            )
        out["cosine_excess_over_floor"] = (
            out["mlp_excess_risk_mean_cosine"] / out["rank_d_floor_excess_risk"]
        )
    return out.sort_values("D", ignore_index=True)


def run_cosine(inputs, scores, output) -> pd.DataFrame:
    """The ``assemble_cosine`` rule."""
    runs = load_runs(inputs.metrics)
    table = cosine_table(
        runs, pd.read_csv(inputs.spectrum), pd.read_csv(inputs.floor), list(scores)
    )
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        log.info("cosine ablation:\n%s", table.T)
    write_csv(table, output.table)
    return table
