"""The sample-size study of Table 1's MLP columns: where the sampled protocol's error goes.

Every cell trains the Gaussian-mixture encoders with the `samples` objective for a fixed number of
steps (a multiple of the default `samples` run's budget) on a pool of n pairs or a fresh stream.
Per run the population excess risk splits exactly into

    approximation   = the rank-D floor (best D-dimensional score of any functions),
    network         = population-trained MLP − floor   (same seed: the same initialisation),
    sampling + path = sampled-protocol MLP − population-trained MLP (column ``sampling``).

The third part is not sampling alone: the two runs also differ in their optimisation path (the
study's minibatch steps against the population run's full-batch quadrature steps, both in the
table), so it can be negative.

Fits (``numerics.powerlaw``), each on the cell means (the estimate) and on each seed alone (its
Student-t interval; ``n_seeds`` = seeds with a finite estimate):

- pool axis: a pool is *pool-bound* when the budget walks it at least ``min_epochs`` times, else
  *budget-bound* (the budget, not the pool, limits). Local exponents between neighbouring pools,
  each labelled with its regime; one power law through all pools with its residuals and a test
  of its shape (first and last local exponents differ: the law is rejected). "consistent with
  1/n" is said only of a pool-bound interval or of a law that is not rejected.
- budget axis (fresh stream): the third part against steps; the budget at which each seed's own
  population level plus its power law enters the reach band (paper × (1 + 10 %)); ∞ for a seed
  whose own level lies above the band. The total excess against steps is fitted but not
  extrapolated (its asymptote is not zero).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from ..integrity import load_json
from ..numerics import tiers
from ..runtime import write_csv
from ..training.budget import pair_counts
from .sample_size_fits import (  # noqa: F401  (re-exported: the study's one namespace)
    THEORY_EXPONENT,
    fit_rows,
    paper_excess,
    theory_verdict,
)

log = logging.getLogger(__name__)


def protocol_name(pool) -> str:
    return "fresh" if pool == "fresh" else f"n={int(pool)}"


# --- runs -----------------------------------------------------------------------------------------
def load_runs(cells, paths, seeds, batch_size: int, budget: int) -> pd.DataFrame:
    """One row per run of the study: ``cells`` (pool, budget multiplier, lr label, D) in the
    order of ``paths`` (every seed of a cell in turn)."""
    if len(paths) != len(cells) * len(seeds):
        raise ValueError(f"{len(paths)} metrics files for {len(cells)} cells × {len(seeds)} seeds")
    rows = []
    for i, path in enumerate(paths):
        pool, mult, lr, dim = cells[i // len(seeds)]
        m = load_json(path)
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

    runs = load_metrics(paths)[["D", "seed", "mlp_excess_risk", "steps"]]
    return runs.rename(columns={"mlp_excess_risk": "population", "steps": "population_steps"})


def decompose(runs: pd.DataFrame, population: pd.DataFrame, floor: pd.DataFrame) -> pd.DataFrame:
    """Each run's excess split into approximation, network and sampling + optimisation path
    (column ``sampling``; paired by seed, negative when the protocol beats the population run)."""
    out = runs.merge(population, on=["D", "seed"], how="left", validate="many_to_one")
    out = out.merge(floor[["D", "rank_d_floor_excess_risk"]], on="D", how="left")
    out = out.rename(columns={"rank_d_floor_excess_risk": "approximation"})
    out["network"] = out["population"] - out["approximation"]
    out["sampling"] = out["mlp_excess_risk"] - out["population"]
    return out


# --- verdicts -------------------------------------------------------------------------------------
def reach_verdict(mean: float, sd: float, paper: float, n=None) -> tuple[str, bool]:
    """(label, reaches) comparing a protocol's mean excess over ``n`` seeds with the paper's MLP
    excess: it reaches the paper when its tier (:func:`crl_approx.numerics.tiers.scale_tier`, the
    one Table 1 uses) is a reaching one; a cell the seeds cannot resolve says so."""
    tier = tiers.scale_tier(mean, paper, sd, n=n)
    if tier == tiers.NONE:
        return tier, False
    if tiers.reaches(tier):
        return f"reaches ({tier})", True
    ratio = mean / paper
    if tier == tiers.UNRESOLVED:
        return f"{tier} ({ratio:.3g}×)", False
    side = "above" if ratio > 1 else "below"
    return f"{side} the paper ({ratio:.3g}×)", False


# --- the table ------------------------------------------------------------------------------------
CELL = ["D", "protocol", "budget_multiplier", "lr"]


def summary(parts: pd.DataFrame, paper: dict, lr0: float) -> pd.DataFrame:
    """One row per cell: mean ± sd over seeds of the excess and its parts, the paper's value and
    the verdict."""
    from ..numerics.stats import summarise

    metrics = ["mlp_excess_risk", "mlp_l2_distance", "population", "network", "sampling"]
    fixed = ["pool_size", "steps", "pairs_seen", "distinct_pairs", "approximation"]
    fixed += ["population_steps"]
    first = parts.groupby(CELL)[fixed].first()  # the same on every seed of a cell
    out = first.reset_index().merge(summarise(parts, CELL, metrics), on=CELL)
    out["is_default_lr"] = np.isclose(out["lr"], lr0)
    out["paper_mlp_excess_risk"] = out["D"].map(paper_excess(paper))
    out["ratio_to_paper"] = out["mlp_excess_risk_mean"] / out["paper_mlp_excess_risk"]
    out["sampling_share"] = out["sampling_mean"] / out["mlp_excess_risk_mean"]
    verdicts = [
        reach_verdict(
            r.mlp_excess_risk_mean, r.mlp_excess_risk_sd, r.paper_mlp_excess_risk, r.n_seeds
        )
        for r in out.itertuples()
    ]
    out["verdict"] = [v for v, _ in verdicts]
    out["reaches_paper"] = [ok for _, ok in verdicts]
    # the bare tier beside the verdict's text, so that nothing downstream parses the text
    out["tier"] = [
        tiers.scale_tier(
            r.mlp_excess_risk_mean, r.paper_mlp_excess_risk, r.mlp_excess_risk_sd, n=r.n_seeds
        )
        for r in out.itertuples()
    ]
    order = {"fresh": math.inf}
    out["_x"] = [order.get(p, s) for p, s in zip(out["protocol"], out["pool_size"], strict=True)]
    out = out.sort_values(["D", "lr", "budget_multiplier", "_x"], ignore_index=True)
    return out.drop(columns="_x")


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
    paper = load_paper_values(inputs.paper, params.setting)
    table = summary(parts, paper, params.lr)
    fits = fit_rows(parts, paper, study, params.budget, params.lr, params.batch_size)
    with pd.option_context("display.width", 250, "display.max_columns", 50):
        log.info("sample-size study:\n%s", table)
        log.info("fits:\n%s", fits)
    write_csv(parts, output.runs)
    write_csv(table, output.table)
    write_csv(fits, output.fits)
    return table
