"""The sample-size study of Table 1's MLP columns: where the sampled protocol's error goes.

Every cell trains the Gaussian-mixture encoders with the `samples` objective for a fixed number of
steps (a multiple of the default `samples` run's budget) on a pool of n pairs or a fresh stream.
Per run the population excess risk splits exactly into

    approximation  = the rank-D floor (best D-dimensional score of any functions),
    network        = population-trained MLP − floor   (same seed: the same initialisation),
    sampling       = sampled-protocol MLP − population-trained MLP.

Fits: y = c·x^(−a) by least squares on log(cell mean) against log x, for the sampling part against
the pool size n (pools at the 1× budget) and against the steps of the fresh stream, and for the
fresh stream's total excess against steps, whose power law is extrapolated to the step budget at
which the paper's value would be reached. Intervals: the same fit on each seed alone (a seed's runs
share its initialisation; seeds are independent), estimate ± Student's t · sd/√k over the k seeds.
"""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd
from scipy import stats

from ..numerics import tiers
from ..runtime import write_csv
from ..training.budget import pair_counts

log = logging.getLogger(__name__)

#: estimation theory's exponent for the sampling part: excess ∝ 1/(number of distinct samples)
THEORY_EXPONENT = 1.0


def protocol_name(pool) -> str:
    return "fresh" if pool == "fresh" else f"n={int(pool)}"


def paper_excess(paper: dict) -> dict[int, float]:
    """The paper's MLP excess risk per D (Table 1)."""
    return {int(r["D"]): r["mlp_excess_risk"] for r in paper["table1"]}


# --- runs -----------------------------------------------------------------------------------------
def load_runs(cells, paths, seeds, batch_size: int, budget: int) -> pd.DataFrame:
    """One row per run of the study: ``cells`` (pool, budget multiplier, lr label, D) in the
    order of ``paths`` (every seed of a cell in turn)."""
    if len(paths) != len(cells) * len(seeds):
        raise ValueError(f"{len(paths)} metrics files for {len(cells)} cells × {len(seeds)} seeds")
    rows = []
    for i, path in enumerate(paths):
        pool, mult, lr, dim = cells[i // len(seeds)]
        with open(path, encoding="utf-8") as fh:
            m = json.load(fh)
        if int(m["D"]) != int(dim) or int(m["seed"]) != int(seeds[i % len(seeds)]):
            raise ValueError(f"{path} holds D={m['D']} seed={m['seed']}, not D={dim}")
        steps = int(m["steps"])
        if steps != budget * int(mult):
            raise ValueError(f"{path} ran {steps} steps, not the cell's {budget} × {mult}")
        seen, distinct = pair_counts(pool, steps, batch_size)
        rows.append(
            {
                "protocol": protocol_name(pool),
                "pool_size": np.nan if pool == "fresh" else int(pool),
                "budget_multiplier": int(mult),
                "steps": steps,
                "lr": float(lr),
                "pairs_seen": seen,
                "distinct_pairs": distinct,
                "D": int(dim),
                "seed": int(m["seed"]),
                "mlp_excess_risk": m["mlp_excess_risk"],
                "mlp_l2_distance": m["mlp_l2_distance"],
                "train_seconds": m["train_seconds"],
                "metrics": path,
            }
        )
    return pd.DataFrame(rows)


def population_runs(paths) -> pd.DataFrame:
    """The population-trained runs' excess per (D, seed)."""
    from .tables import load_runs as load_metrics

    runs = load_metrics(paths)[["D", "seed", "mlp_excess_risk"]]
    return runs.rename(columns={"mlp_excess_risk": "population"})


def decompose(runs: pd.DataFrame, population: pd.DataFrame, floor: pd.DataFrame) -> pd.DataFrame:
    """Each run's excess split into approximation, network and sampling (paired by seed)."""
    out = runs.merge(population, on=["D", "seed"], how="left", validate="many_to_one")
    out = out.merge(floor[["D", "rank_d_floor_excess_risk"]], on="D", how="left")
    out = out.rename(columns={"rank_d_floor_excess_risk": "approximation"})
    out["network"] = out["population"] - out["approximation"]
    out["sampling"] = out["mlp_excess_risk"] - out["population"]
    return out


# --- verdicts -------------------------------------------------------------------------------------
def reach_verdict(mean: float, sd: float, paper: float) -> tuple[str, bool]:
    """(label, reaches) comparing a protocol's mean excess with the paper's MLP excess: it reaches
    the paper when its tier (:func:`crl_approx.numerics.tiers.scale_tier`, the one Table 1 uses)
    is a reaching one."""
    tier = tiers.scale_tier(mean, paper, sd)
    if tier == tiers.NONE:
        return tier, False
    if tiers.reaches(tier):
        return f"reaches ({tier})", True
    ratio = mean / paper
    side = "above" if ratio > 1 else "below"
    return f"{side} the paper ({ratio:.3g}×)", False


def theory_verdict(lo: float, hi: float, theory: float = THEORY_EXPONENT) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "—"
    if lo <= theory <= hi:
        return "consistent with 1/n"
    return "slower than 1/n" if hi < theory else "faster than 1/n"


# --- the table ------------------------------------------------------------------------------------
CELL = ["D", "protocol", "budget_multiplier", "lr"]


def summary(parts: pd.DataFrame, paper: dict, lr0: float) -> pd.DataFrame:
    """One row per cell: mean ± sd over seeds of the excess and its parts, the paper's value and
    the verdict."""
    from ..numerics.stats import summarise

    metrics = ["mlp_excess_risk", "mlp_l2_distance", "population", "network", "sampling"]
    fixed = ["pool_size", "steps", "pairs_seen", "distinct_pairs", "approximation"]
    first = parts.groupby(CELL)[fixed].first()  # the same on every seed of a cell
    out = first.reset_index().merge(summarise(parts, CELL, metrics), on=CELL)
    out["is_default_lr"] = np.isclose(out["lr"], lr0)
    out["paper_mlp_excess_risk"] = out["D"].map(paper_excess(paper))
    out["ratio_to_paper"] = out["mlp_excess_risk_mean"] / out["paper_mlp_excess_risk"]
    out["sampling_share"] = out["sampling_mean"] / out["mlp_excess_risk_mean"]
    verdicts = [
        reach_verdict(r.mlp_excess_risk_mean, r.mlp_excess_risk_sd, r.paper_mlp_excess_risk)
        for r in out.itertuples()
    ]
    out["verdict"] = [v for v, _ in verdicts]
    out["reaches_paper"] = [ok for _, ok in verdicts]
    order = {"fresh": math.inf}
    out["_x"] = [order.get(p, s) for p, s in zip(out["protocol"], out["pool_size"], strict=True)]
    out = out.sort_values(["D", "lr", "budget_multiplier", "_x"], ignore_index=True)
    return out.drop(columns="_x")


# --- fits -----------------------------------------------------------------------------------------
def power_fit(x, y) -> tuple[float, float, int]:
    """(a, log c, points used) of y = c·x^(−a) by least squares in log-log, positive y only."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 2 or len(np.unique(x[ok])) < 2:
        return math.nan, math.nan, int(ok.sum())
    slope, intercept = np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)
    return float(-slope), float(intercept), int(ok.sum())


def budget_to_reach(a: float, log_c: float, target: float, offset: float = 0.0) -> float:
    """Steps S at which offset + c·S^(−a) = target (inf when never: a <= 0 or target <= offset)."""
    gap = target - offset
    if not (math.isfinite(a) and math.isfinite(log_c)) or a <= 0 or gap <= 0:
        return math.inf
    return float(math.exp((log_c - math.log(gap)) / a))


def t_interval(estimate: float, per_seed, level: float) -> tuple[float, float]:
    """estimate ± t·sd/√k from the k per-seed estimates (Student's t with k − 1 degrees of
    freedom: seeds are independent runs, and there are few of them). NaN with fewer than two
    finite per-seed values."""
    v = np.asarray(per_seed, float)
    v = v[np.isfinite(v)]
    if len(v) < 2 or not math.isfinite(estimate):
        return math.nan, math.nan
    half = stats.t.ppf((1 + level) / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return estimate - half, estimate + half


def fit_rows(parts: pd.DataFrame, paper: dict, level: float, budget_dims, budget: int, lr0: float):
    """Per D: the sampling part against n (pools, 1× budget, train.lr); for the D of the budget
    axis, the fresh stream's sampling part and total excess against steps, with the budgets at
    which the paper's value would be reached."""
    paper_by_d = paper_excess(paper)
    lr_ok = np.isclose(parts["lr"], lr0)
    rows = []
    for dim in sorted(parts["D"].unique()):
        sub = parts[(parts["D"] == dim) & lr_ok]
        pools = sub[(sub["protocol"] != "fresh") & (sub["budget_multiplier"] == 1)]
        fresh = sub[sub["protocol"] == "fresh"]
        specs = [("sampling vs pool size", pools, "pool_size", "sampling")]
        if dim in budget_dims:
            specs += [
                ("sampling vs steps (fresh)", fresh, "steps", "sampling"),
                ("excess vs steps (fresh)", fresh, "steps", "mlp_excess_risk"),
            ]
        for name, data, xcol, ycol in specs:
            if data[xcol].nunique() < 2:
                continue
            rows.append(_fit_one(name, dim, data, xcol, ycol, level, paper_by_d.get(dim), budget))
    return pd.DataFrame(rows)


def _fit_one(name, dim, data, xcol, ycol, level, paper, budget) -> dict:
    """The fit on the cell means (the estimate) and on each seed alone (for its interval)."""
    means = data.groupby(xcol)[ycol].mean()
    a, log_c, used = power_fit(means.index.to_numpy(), means.to_numpy())
    per_seed = [
        power_fit(g[xcol].to_numpy(), g[ycol].to_numpy())[:2] for _, g in data.groupby("seed")
    ]
    lo, hi = t_interval(a, [p[0] for p in per_seed], level)
    row = {
        "D": int(dim),
        "fit": name,
        "x": xcol,
        "y": ycol,
        "x_values": " ".join(f"{v:g}" for v in means.index),
        "exponent": a,
        "exponent_lo": lo,
        "exponent_hi": hi,
        "log_prefactor": log_c,
        "n_points": used,
        "n_excluded": int(len(means) - used),
        "n_seeds": len(per_seed),
        "theory_exponent": THEORY_EXPONENT if ycol == "sampling" else math.nan,
        "theory_verdict": theory_verdict(lo, hi) if ycol == "sampling" else "—",
        "paper_mlp_excess_risk": paper if paper is not None else math.nan,
        "population_mean": float(data.groupby("seed")["population"].first().mean()),
        "budget_to_paper": math.nan,
        "budget_to_paper_lo": math.nan,
        "budget_to_paper_hi": math.nan,
    }
    if xcol == "steps" and paper is not None:
        # excess: a pure power law; sampling: the population-trained level plus a power law
        offset = row["population_mean"] if ycol == "sampling" else 0.0
        point = budget_to_reach(a, log_c, paper, offset) / budget
        seeds = [budget_to_reach(a_, c_, paper, offset) / budget for a_, c_ in per_seed]
        row["budget_to_paper"] = point
        if math.isfinite(point) and all(map(math.isfinite, seeds)):
            lo_b, hi_b = t_interval(math.log(point), np.log(seeds), level)
            row["budget_to_paper_lo"], row["budget_to_paper_hi"] = math.exp(lo_b), math.exp(hi_b)
        elif len(seeds) > 1:
            row["budget_to_paper_hi"] = math.inf  # some seed never reaches it
    return row


# --- the rule -------------------------------------------------------------------------------------
def run(inputs, params, output) -> pd.DataFrame:
    """The ``assemble_sample_size`` rule."""
    from ..config import load_paper_values

    study = params.study
    runs = load_runs(
        params.cells, list(inputs.study), list(params.seeds), params.batch_size, params.budget
    )
    parts = decompose(runs, population_runs(inputs.population), pd.read_csv(inputs.floor))
    if parts["population"].isna().any():
        raise ValueError("a study run has no population-trained run of the same D and seed")
    paper = load_paper_values(inputs.paper)
    table = summary(parts, paper, params.lr)
    fits = fit_rows(parts, paper, study["ci_level"], study["budget_dims"], params.budget, params.lr)
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        log.info("sample-size study:\n%s", table)
        log.info("fits:\n%s", fits)
    write_csv(parts, output.runs)
    write_csv(table, output.table)
    write_csv(fits, output.fits)
    return table
