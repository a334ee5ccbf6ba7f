"""What README's run blocks print that is not a cell of a table the rules write: the differences,
ratios, seed-sd distances, counts, interval checks and best rows its prose cites, computed here
from a run's tables (:class:`.readme.Run`) so that the template only prints.

One function per block of ``report/templates/readme.md.j2``; each returns a dict of plain values
(or table rows). tests/unit/test_readme_run_facts.py checks them on crafted tables whose answers are
worked out by hand.
"""

from __future__ import annotations

import math

from ..numerics import tiers


def inside(lo: float, value: float, hi: float) -> bool:
    """Whether ``value`` lies in the closed interval [lo, hi]."""
    return bool(lo <= value <= hi)


def decade_above(value: float) -> str:
    """A bound one decade above ``value``'s decade: 3e-7 → "1e-5" (log10 rounded up, plus one);
    README bounds the rank floor's final gradient with it, which varies between machines."""
    return f"1e{math.ceil(math.log10(float(value))) + 1}"


def spectrum(run) -> dict:
    """Table 1's exact columns: how many cells match the paper to every printed digit, the largest
    change between the two quadrature grids (its row), and the range of excess/tail."""
    verdicts = run.spectral_verdicts()
    s = run.spectrum
    return {
        "matching": sum(v == tiers.MATCH for v in verdicts),
        "cells": len(verdicts),
        "largest_change": run.convergence.sort_values("rel_change").iloc[-1],
        "ratio_lo": float(s.excess_to_tail_ratio.min()),
        "ratio_hi": float(s.excess_to_tail_ratio.max()),
    }


def table1(run, low_max: int = 4, small_max: int = 2, dim: int = 8) -> dict:
    """Table 1's trained columns: the report's verdicts of the population MLPs at D <= ``low_max``
    and their distance to the paper; at D = ``dim`` the gap to the paper in seed sds, the seeds'
    interval half-width and whether the seeds resolve it; the excess over the floor at D <=
    ``small_max`` (both objectives)."""
    t = run.table1
    pop = t.loc["population"]
    low = pop[pop.index <= low_max]
    verdicts = run.t1_verdicts("population", low.index, ("mlp_excess_risk", "mlp_l2_distance"))
    p = t.loc[("population", dim)]
    gap = abs(p.paper_mlp_excess_risk - p.mlp_excess_risk_mean)
    v = run.t1_verdict("population", dim)
    return {
        "low_reaches": all(x in tiers.REACHING for x in verdicts),
        "low_verdicts": list(dict.fromkeys(verdicts)),
        "low_excess_dev": (low.ratio_mlp_excess_risk - 1).abs(),
        "low_l2_dev": (low.ratio_mlp_l2_distance - 1).abs(),
        "verdict": v,
        "unresolved": v == tiers.UNRESOLVED,
        "gap": gap,
        "gap_sd": gap / p.mlp_excess_risk_sd,
        "half_width": tiers.seed_half_width(p.mlp_excess_risk_sd, p.n_seeds),
        "level_pct": round(100 * tiers.SEED_LEVEL),
        "seeds": run.seed_excess("population", dim),
        "small_over_floor": t[t.index.get_level_values("D") <= small_max].mlp_excess_over_floor,
    }


def study_columns(config: dict) -> list[str]:
    """The study table's protocols, in its column order: the pools by size, then the fresh
    stream."""
    names = ["n=%d" % n for n in sorted(config["sample_size"]["pools"])]  # noqa: UP031 (as the table)
    return names + (["fresh"] if config["sample_size"]["fresh"] else [])


def study(run, config: dict, dims=(4, 8)) -> dict:
    """The sample-size study's prose: at D in ``dims`` (1x budget, the default learning rate) the
    best protocol by its ratio to the paper, whether any reaches it and whether any is unresolved;
    the fresh stream's steps, the pairs they draw and how often they walk the largest pool."""
    base = run.study_rows(budget=1, default_lr=True)
    hi = base[base.D >= min(dims)]
    steps = run.study(max(dims), "fresh").steps
    batch = config["train"]["batch_size"]
    largest = max(config["sample_size"]["pools"])
    return {
        "hi": hi,
        "best": {d: hi[hi.D == d].sort_values("ratio_to_paper").iloc[0] for d in dims},
        "reaches_any": bool(hi.reaches_paper.any()),
        "unresolved_any": bool(hi.tier.isin(tiers.UNRESOLVED_LABELS).any()),
        "steps": steps,
        "largest_pool": largest,
        "walks": steps * batch / largest,
    }


def fresh_pairs(run, config: dict) -> int:
    """The pairs the study's longest 1x protocol draws: its steps times the batch (the study
    table's fresh column)."""
    base = run.study_rows(budget=1, default_lr=True)
    return int(base.steps.max()) * config["train"]["batch_size"]


def lcgm(run, config: dict, paper: dict) -> dict:
    """The LCGM probes at D = K against the paper (differences, g's in seed sds, the tiers at the
    paper's printed precision) and the held-out excess's fall from D = K/2 to K."""
    K = config["lcgm"]["K"]
    t = run.lcgm
    k = t.loc[K]
    ref = paper["lcgm"]
    half = int(K / 2)
    diff_f = k.probe_r2_f_mean - ref["probe_r2_f"]
    diff_g = k.probe_r2_g_mean - ref["probe_r2_g"]
    top = t[t.index >= K]
    return {
        "diff_f": diff_f,
        "diff_g": diff_g,
        "g_sd": abs(diff_g) / k.probe_r2_g_sd,
        "tier_f": tiers.bounded_tier(k.probe_r2_f_mean, ref["probe_r2_f"], ref["printed_decimals"]),
        "tier_g": tiers.bounded_tier(k.probe_r2_g_mean, ref["probe_r2_g"], ref["printed_decimals"]),
        "half": half,
        "half_excess": t.heldout_excess_mean.loc[half],
        "fall": t.heldout_excess_mean.loc[half] / k.heldout_excess_mean,
        "top": top,
        "top_dim": int(top.index.max()),
        "top_excess": top.heldout_excess_mean.iloc[-1],
    }


def noise(run, paper: dict) -> dict:
    """μ̂ on the mixture against the paper's: the difference and whether our interval holds it."""
    p = run.pooled("gmm")
    ref = paper["noise"]["mu_hat"]
    return {"diff": p.mu_hat - ref, "inside": inside(p.mu_ci_lo, ref, p.mu_ci_hi)}


def calibration_scores(run) -> dict:
    """The calibration's scores: checkpoints and rank-D truncations."""
    pts = run.calibration_points
    truncations = int((pts.source == "truncation").sum())
    return {"scores": len(pts), "checkpoints": len(pts) - truncations, "truncations": truncations}


def calibration_inside(run, groups=("checkpoints_D4", "checkpoints_D8")) -> dict:
    """Per group of ``groups``, whether its exponent's interval holds the noise rate
    (μ̂+1)/(μ̂+2) and the log-corrected rate 2/3."""
    c = run.calibration
    rate = c.loc["all"].noise_rate
    within = {}
    for name in groups:
        r = c.loc[name]
        within[name] = {
            "noise_rate": inside(r.exponent_ci_lo, rate, r.exponent_ci_hi),
            "two_thirds": inside(r.exponent_ci_lo, 2 / 3, r.exponent_ci_hi),
        }
    return within


def cosine(run, dim: int = 2) -> dict:
    """The cosine ablation's seed spread at D = ``dim``: sd over mean of its excess."""
    r = run.cosine.loc[dim]
    return {"sd_share": r.mlp_excess_risk_sd_cosine / r.mlp_excess_risk_mean_cosine}


def digits(cancorr, job_times: dict) -> dict:
    """Experiment R's halves: how many canonical correlations exceed the largest shuffled one;
    the new rules' job time in all."""
    shuffled = float(cancorr.cancorr_shuffled.max())
    return {
        "above_shuffled": int((cancorr.cancorr > shuffled).sum()),
        "cancorrs": len(cancorr),
        "shuffled_max": shuffled,
        "job_s": sum(v["job_s"] for v in job_times.values()),
    }
