"""The sample-size study's fits (see :mod:`crl_approx.analyses.sample_size` for the design):
the pool axis in its two regimes, the budget axis with per-seed asymptotes and the reach band."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics import powerlaw, tiers

#: estimation theory's exponent for the sampling part: excess ∝ 1/(number of distinct samples)
THEORY_EXPONENT = 1.0


def paper_excess(paper: dict) -> dict[int, float]:
    """The paper's MLP excess risk per D (Table 1)."""
    return {int(r["D"]): r["mlp_excess_risk"] for r in paper["table1"] if r["mlp_excess_risk"]}


#: an exponent interval wider than ± this cannot tell 1/n from 1/√n (or from n^(−1.5)): such a
#: fit is "inconclusive", never "consistent with" the theory
THEORY_HALF_WIDTH = 0.5


#: the theory reading of a fit whose local exponents reject one power law
NO_POWER_LAW = "— (one power law does not fit)"


def theory_verdict(lo: float, hi: float, unit: str = "n", theory: float = THEORY_EXPONENT) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "—"
    if (hi - lo) / 2 > THEORY_HALF_WIDTH:
        return f"inconclusive (interval wider than ±{THEORY_HALF_WIDTH:g})"
    if lo <= theory <= hi:
        return f"consistent with 1/{unit}"
    return f"slower than 1/{unit}" if hi < theory else f"faster than 1/{unit}"


# --- fits -----------------------------------------------------------------------------------------
def regime(pool_size: float, steps: int, batch_size: int, min_epochs: float) -> str:
    """ "pool-bound" when ``steps`` batches walk the pool at least ``min_epochs`` times (the pool
    limits), else "budget-bound" (the budget limits: the pool is barely reused)."""
    return "pool-bound" if steps * batch_size / pool_size >= min_epochs else "budget-bound"


def _row(dim, name, xcol, ycol, xs, fit, interval, per_seed, **extra) -> dict:
    finite = [f for f in per_seed if math.isfinite(f)]
    return {
        "D": int(dim),
        "fit": name,
        "x": xcol,
        "y": ycol,
        "x_values": " ".join(f"{v:g}" for v in xs),
        "regime": "",
        "regime_kind": "",  # a local fit's regime alone: pool-bound / budget-bound
        "exponent": fit["a"],
        "exponent_lo": interval[0],
        "exponent_hi": interval[1],
        "log_prefactor": fit["log_c"],
        "n_points": fit["n_points"],
        "n_excluded": int(len(xs) - fit["n_points"]),
        "n_seeds": len(finite),
        "dof": fit["dof"],
        "rms_log_residual": fit["rms_log_residual"],
        "shape_test": "",
        "shape_outcome": "",  # the shape test's outcome alone: rejected / not rejected / untested
        "theory_exponent": math.nan,
        "theory_verdict": "—",
        "paper_mlp_excess_risk": math.nan,
        "reach_target": math.nan,
        "population_mean": math.nan,
        "budget_to_band": math.nan,
        "budget_to_band_lo": math.nan,
        "budget_to_band_hi": math.nan,
        "n_seeds_reaching": math.nan,
    } | extra


def _by_seed(data: pd.DataFrame, xcol: str, ycol: str) -> dict:
    """{seed: pd.Series of y indexed by x} (one run per seed and x)."""
    return {s: g.groupby(xcol)[ycol].mean() for s, g in data.groupby("seed")}


def pool_rows(dim, pools: pd.DataFrame, level, batch_size, min_epochs) -> list[dict]:
    """The pool axis at one D: local exponents between neighbouring pools, each with its regime,
    then one power law through every pool with its residuals and the test of its shape."""
    means = pools.groupby("pool_size")["sampling"].mean()
    ns = means.index.to_numpy(float)
    steps = int(pools["steps"].iloc[0])
    seeds = _by_seed(pools, "pool_size", "sampling")
    local = powerlaw.local_exponents(ns, means.to_numpy())
    local_seed = [powerlaw.local_exponents(v.index, v.to_numpy()) for v in seeds.values()]
    rows = []
    for i, a in enumerate(local):
        per = [v[i] if len(v) == len(local) else math.nan for v in local_seed]
        lo, hi = powerlaw.t_interval(a, per, level)
        walks = steps * batch_size / ns[i + 1]
        bound = regime(ns[i + 1], steps, batch_size, min_epochs) == "pool-bound"
        fit = {"a": a, "log_c": math.nan, "n_points": 2, "dof": 0, "rms_log_residual": math.nan}
        rows.append(
            _row(
                dim,
                f"sampling vs pool size (local {ns[i]:g}→{ns[i + 1]:g})",
                "pool_size",
                "sampling",
                ns[i : i + 2],
                fit,
                (lo, hi),
                per,
                regime=f"{'pool' if bound else 'budget'}-bound (n = {ns[i + 1]:g} walked "
                f"{walks:.3g} times; pool-bound from {min_epochs:g})",
                regime_kind="pool-bound" if bound else "budget-bound",
                theory_exponent=THEORY_EXPONENT,
                theory_verdict=theory_verdict(lo, hi) if bound else "— (budget-bound)",
            )
        )
    fit = powerlaw.power_fit(ns, means.to_numpy())
    per = [powerlaw.power_fit(v.index, v.to_numpy())["a"] for v in seeds.values()]
    lo, hi = powerlaw.t_interval(fit["a"], per, level)
    verdict, outcome, detail = theory_verdict(lo, hi), "untested", "fewer than three pools"
    if len(local) >= 2:
        diff = local[0] - local[-1]
        d_lo, d_hi = powerlaw.t_interval(diff, [v[0] - v[-1] for v in local_seed], level)
        detail = f"first − last local exponent {diff:.2f} [{d_lo:.2f}, {d_hi:.2f}]"
        if d_lo > 0 or d_hi < 0:
            outcome, verdict = "rejected", NO_POWER_LAW
        else:
            outcome = "not rejected" if math.isfinite(d_lo) else "untested"
    shape = f"{outcome}: {detail}" if len(local) >= 2 else f"{outcome} ({detail})"
    kinds = {regime(n, steps, batch_size, min_epochs) for n in ns}
    if kinds != {"pool-bound"} and verdict != NO_POWER_LAW:
        verdict = "— (not every pool is pool-bound)"  # only pool-bound fits meet the theory
    return [
        *rows,
        _row(
            dim,
            "sampling vs pool size",
            "pool_size",
            "sampling",
            ns,
            fit,
            (lo, hi),
            per,
            regime=kinds.pop() if len(kinds) == 1 else "both regimes",
            shape_test=shape,
            shape_outcome=outcome,
            theory_exponent=THEORY_EXPONENT,
            theory_verdict=verdict,
        ),
    ]


def steps_rows(dim, fresh: pd.DataFrame, level, paper, budget: int) -> list[dict]:
    """The budget axis at one D (fresh stream): the third part against steps, extrapolated with
    each seed's own population level as asymptote to the reach band; the total excess against
    steps, not extrapolated."""
    rows = []
    pop = fresh.groupby("seed")["population"].first()
    band = paper * (1 + tiers.CLOSE_TOLERANCE) if paper is not None else math.nan
    for name, ycol in (
        ("sampling vs steps (fresh)", "sampling"),
        ("excess vs steps (fresh)", "mlp_excess_risk"),
    ):
        means = fresh.groupby("steps")[ycol].mean()
        fit = powerlaw.power_fit(means.index, means.to_numpy())
        seeds = {
            s: powerlaw.power_fit(v.index, v.to_numpy())
            for s, v in _by_seed(fresh, "steps", ycol).items()
        }
        per = [f["a"] for f in seeds.values()]
        lo, hi = powerlaw.t_interval(fit["a"], per, level)
        row = _row(
            dim,
            name,
            "steps",
            ycol,
            means.index,
            fit,
            (lo, hi),
            per,
            regime="fresh (each pair seen once)",
        )
        row["paper_mlp_excess_risk"] = paper if paper is not None else math.nan
        row["population_mean"] = float(pop.mean())
        if ycol == "sampling":
            row["theory_exponent"] = THEORY_EXPONENT
            row["theory_verdict"] = theory_verdict(lo, hi, "steps")
        if ycol == "sampling" and math.isfinite(band):
            point = powerlaw.x_to_reach(fit["a"], fit["log_c"], band, float(pop.mean())) / budget
            each = [
                powerlaw.x_to_reach(f["a"], f["log_c"], band, float(pop[s])) / budget
                for s, f in seeds.items()
                if math.isfinite(f["a"])
            ]
            row |= {"reach_target": band, "budget_to_band": point}
            row["n_seeds_reaching"] = sum(map(math.isfinite, each))
            if each and all(map(math.isfinite, [*each, point])):
                b_lo, b_hi = powerlaw.t_interval(math.log(point), np.log(each), level)
                row["budget_to_band_lo"], row["budget_to_band_hi"] = math.exp(b_lo), math.exp(b_hi)
            elif len(each) > 1:
                row["budget_to_band_hi"] = math.inf  # some seed's own level lies above the band
        rows.append(row)
    return rows


def fit_rows(
    parts: pd.DataFrame, paper: dict, study: dict, budget: int, lr0: float, batch_size: int
):
    """Per D: the pool axis (pools at the 1× budget, train.lr); for the D of the budget axis, the
    fresh stream against steps. ``study`` is the config's ``sample_size`` section."""
    paper_by_d = paper_excess(paper)
    level = study["ci_level"]
    lr_ok = np.isclose(parts["lr"], lr0)
    rows = []
    for dim in sorted(parts["D"].unique()):
        sub = parts[(parts["D"] == dim) & lr_ok]
        pools = sub[(sub["protocol"] != "fresh") & (sub["budget_multiplier"] == 1)]
        fresh = sub[sub["protocol"] == "fresh"]
        if pools["pool_size"].nunique() >= 2:
            rows += pool_rows(dim, pools, level, batch_size, study["min_epochs"])
        if dim in study["budget_dims"] and fresh["steps"].nunique() >= 2:
            rows += steps_rows(dim, fresh, level, paper_by_d.get(dim), budget)
    return pd.DataFrame(rows)
