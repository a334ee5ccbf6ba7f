"""Experiment W's assembly: the excess against one tower's hidden width per world, split into its
world's floor and the approximation part above it, the width the approximation part needs to reach
each ε of a ladder, the fitted growth of that width with 1/ε and the shape test
(:mod:`crl_approx.numerics.widths`), the noise-aware saturation point in width
(:mod:`crl_approx.numerics.saturation`), and the pre-registered predictions W1–W7
(docs/widths.md, :mod:`.widths_verdicts`), every verdict gated by convergence (:mod:`.convergence`).

The floor of a world (:func:`floors`):

* LCGM worlds (a fresh stream: no estimation error): the widest cell's held-out excess (both towers
  at train.width), the seeds' mean: what optimisation leaves at the budget when the network's own
  approximation error is smallest. Measured again at widths.budget_check × the steps on the LCGM's
  own dimensions: the part of the floor a doubled budget removes (``budget_drop``, paired by seed).
* mixture: the exact best rank-D InfoNCE excess (rule compute_rank_floor); the widest cell's
  excess above it is what optimisation leaves there.

A level ε is read only where it lies at or above the world's *reading limit* (:func:`read_limit`):
the floor on the LCGM (an approximation part smaller than what optimisation leaves at the widest
cell is not told apart from optimisation), the widest cell's excess above the exact floor on the
mixture, and on every LCGM world also budget_drop / CLOSE_TOLERANCE (a level the doubled budget
moves by more than the verdict tolerance is not a stable reading): the world's own drop where its
widest cell ran at 2x (budget_check_scope sweeps), else the LCGM's.

The same check gates the LCGM's verdicts (``budget_moves``, :func:`budget_moves`): where twice the
steps resolvably lower the widest cell's excess by more than a tenth of it, the runs are not shown
converged (the guide's "a 2x budget agrees"), whatever their last fifth says.
"""

from __future__ import annotations

import logging
import math

import pandas as pd

from ..numerics import powerlaw, saturation
from ..numerics import widths as wn
from ..numerics.tiers import CLOSE_TOLERANCE
from .convergence import cell_convergence

log = logging.getLogger(__name__)

#: each world's excess: the held-out InfoNCE excess (LCGM sweep), the population excess (Table 1)
EXCESS = {"lcgm": "heldout_excess", "gmm": "mlp_excess_risk"}
#: W3: both mixture towers saturate by this width
W3_WIDTH = 32


def runs_table(metric_paths, cells, seeds) -> pd.DataFrame:
    """One row per (cell, seed), in the order the rule lists them (cells × seeds)."""
    from ..integrity import load_json

    rows, i = [], 0
    for world, tower, width, budget in cells:
        for seed in seeds:
            m = load_json(metric_paths[i])
            i += 1
            rows.append(
                {
                    "world": world,
                    "tower": tower,
                    "width": int(width),
                    "budget": budget,
                    "seed": int(seed),
                    "excess": float(m[EXCESS["lcgm" if is_lcgm(world) else "gmm"]]),
                    "final_val_loss": m["final_val_loss"],
                    "steps": m["steps"],
                    "val_losses": [h["val_loss"] for h in m["history"]],
                    "source": str(metric_paths[i - 1]),
                }
            )
    return pd.DataFrame(rows)


def is_lcgm(world: str) -> bool:
    """The LCGM worlds: ``lcgm`` and the dimension sweep's ``lcgm_d<d>``."""
    return world.startswith("lcgm")


def floors(
    runs: pd.DataFrame, rank_floor: pd.DataFrame | None, gmm_dim: int, level
) -> pd.DataFrame:
    """Per world: its floor (LCGM: the widest cell's excess, seeds' mean; mixture: the exact
    rank-D floor at D = ``gmm_dim``), the widest cell's excess, and on the LCGM world with a 2x
    cell the floor's drop at twice the budget (paired by seed, Student-t interval)."""
    rows = []
    for world in runs["world"].unique():
        if is_lcgm(world):
            widest = runs[(runs["world"] == world) & (runs["tower"] == "both")]
            one = widest[widest["budget"] == "1x"].set_index("seed")["excess"]
            two = widest[widest["budget"] == "2x"].set_index("seed")["excess"]
            floor, kind = float(one.mean()), "widest cell"
        else:
            w = runs[runs["world"] == world]
            one = w[w["width"] == w["width"].max()].drop_duplicates("seed")
            one = one.set_index("seed")["excess"]
            two = pd.Series(dtype=float)
            at = rank_floor[rank_floor["D"] == gmm_dim]["rank_d_floor_excess_risk"]
            floor, kind = float(at.iloc[0]), f"exact rank-{gmm_dim}"
        drop = lo = hi = math.nan
        if not two.empty:
            diff = (one - two.reindex(one.index)).dropna()
            drop = float(diff.mean())
            lo, hi = powerlaw.t_interval(drop, diff.to_numpy(), level)
        rows.append(
            {
                "world": world,
                "floor": floor,
                "floor_kind": kind,
                "widest_excess": float(one.mean()),
                "widest_sd": float(one.std(ddof=1)) if len(one) > 1 else math.nan,
                "budget_excess": float(two.mean()) if not two.empty else math.nan,
                "budget_drop": drop,
                "budget_drop_lo": lo,
                "budget_drop_hi": hi,
            }
        )
    out = pd.DataFrame(rows)
    # the LCGM's budget check (its own dimensions) stands for every LCGM world whose widest cell
    # was not trained at 2x itself (budget_check_scope widest: one 2x cell); a world's own drop
    # sets its reading limit where it was measured (scope sweeps)
    main = out[out["budget_drop"].notna() & out["world"].map(is_lcgm)]
    drop = float(main["budget_drop"].iloc[0]) if len(main) else math.nan
    out["read_limit"] = [
        read_limit(r, r.budget_drop if math.isfinite(r.budget_drop) else drop)
        for r in out.itertuples()
    ]
    moves = bool(len(main)) and budget_moves(main.iloc[0])
    out["budget_moves"] = [moves and is_lcgm(x) for x in out["world"]]
    return out


def floors_move(floors: pd.DataFrame) -> bool:
    """Whether the doubled-budget gate is set in a :func:`floors` table (in memory or read back
    from widths_floors.csv, whose booleans may read as text): it gates every LCGM verdict."""
    return bool(floors["budget_moves"].isin([True, "True"]).any())


def budget_moves(row) -> bool:
    """Whether the doubled budget resolvably moves the widest cell's excess by more than the
    verdict tolerance, CLOSE_TOLERANCE of it (the drop's Student-t interval wholly beyond ± a
    tenth of the excess at B): then the LCGM's cells have not converged at the budget, and its
    decided verdicts are "unresolved: not converged" (:func:`.widths_verdicts.verdicts`; an
    amendment of 2026-12-05, docs/widths.md). False where the drop is not measured."""
    bar = CLOSE_TOLERANCE * abs(row["widest_excess"])
    lo, hi = row["budget_drop_lo"], row["budget_drop_hi"]
    return bool(lo > bar or hi < -bar)


def read_limit(row, lcgm_drop: float) -> float:
    """The smallest ε read on a world (module docstring): the floor (LCGM) or the widest cell's
    excess above the exact floor (mixture), and on the LCGM the doubled budget's drop over the
    verdict tolerance."""
    if not is_lcgm(row.world):
        return max(row.widest_excess - row.floor, 0.0)
    moved = max(lcgm_drop, 0.0) / CLOSE_TOLERANCE if math.isfinite(lcgm_drop) else 0.0
    return max(row.floor, moved)


def with_approximation(runs: pd.DataFrame, floor_table: pd.DataFrame) -> pd.DataFrame:
    """The runs with their world's floor and approximation part (excess − floor)."""
    f = floor_table.set_index("world")["floor"]
    out = runs.copy()
    out["floor"] = out["world"].map(f)
    out["approx"] = out["excess"] - out["floor"]
    return out


def with_doubled_floors(runs: pd.DataFrame, floor_table: pd.DataFrame) -> pd.DataFrame:
    """The LCGM worlds' cells at 2x against their world's floor at 2x (its widest cell there,
    ``budget_excess``), for a run that trained every LCGM cell at 2x (budget_check_scope
    sweeps): each budget's cells against that budget's floor."""
    at_2x = floor_table.set_index("world")["budget_excess"]
    out = runs.copy()
    two = (out["budget"] == "2x") & out["world"].map(is_lcgm)
    out.loc[two, "floor"] = out.loc[two, "world"].map(at_2x)
    out["approx"] = out["excess"] - out["floor"]
    return out


def _sd(values: pd.Series) -> float:
    return float(values.std(ddof=1)) if len(values) > 1 else math.nan


def cell_table(runs: pd.DataFrame, default_width: int, limits=None) -> pd.DataFrame:
    """Per cell: excess and approximation part, mean ± sd over seeds, the floor, whether it is
    the widest cell, and its convergence: the last-fifth drop against CLOSE_TOLERANCE × the value
    the verdicts read at the cell, its mean excess or, where that is smaller, its world's
    smallest ε read (``limits``: world → read_limit; the widest cells' excess is a floor that no
    reading compares at its own scale)."""
    limits = limits or {}
    rows = []
    for key, g in runs.groupby(["world", "tower", "width", "budget"], sort=True):
        mean = float(g["excess"].mean())
        scale = max(abs(mean), float(limits.get(key[0], 0.0)))
        conv = cell_convergence(list(g["val_losses"]), CLOSE_TOLERANCE * scale)
        rows.append(
            dict(zip(("world", "tower", "width", "budget"), key, strict=True))
            | {
                "excess_mean": mean,
                "excess_sd": _sd(g["excess"]),
                "floor": float(g["floor"].iloc[0]),
                "approx_mean": float(g["approx"].mean()),
                "approx_sd": _sd(g["approx"]),
                "n_seeds": len(g),
                "steps": int(g["steps"].iloc[0]),
                "widest": key[2] == default_width,
                "reused": not is_lcgm(key[0]) and key[2] == default_width,
                "converged": conv["converged"],
                "best_at_end": conv["best_at_end"],
                "drop_over_effect": conv["drop_over_effect"],
            }
        )
    return pd.DataFrame(rows)


def _sweep(runs, world, tower, values="approx"):
    """(widths, per-seed rows aligned by seed) of one tower's sweep (budget 1x): the
    approximation part, or ``values`` ("excess")."""
    sub = runs[(runs["world"] == world) & (runs["tower"] == tower) & (runs["budget"] == "1x")]
    wide = sub.pivot_table(index="width", columns="seed", values=values, aggfunc="first")
    return wide.index.to_numpy(int), wide.to_numpy(float)


def eps_rows(runs, world, tower, eps_levels, limit: float = 0.0) -> list[dict]:
    """The width the approximation part needs per ε; levels below ``limit`` (the world's
    reading limit) are not read. On the LCGM the last segment ends at the floor's own cell: read
    linearly in the approximation part there (:func:`..numerics.widths.width_to_reach`)."""
    widths, vals = _sweep(runs, world, tower)
    out = []
    for r in wn.ladder(widths, vals, eps_levels, limit, linear_last=is_lcgm(world)):
        out.append({"world": world, "tower": tower} | r)
    return out


def table2_exponent(world: str, tower: str, theory: dict) -> tuple[str, float]:
    """Table 2's law for the width a tower needs (its size L·N at fixed depth): the LCGM's anchor
    log²(1/ε) (polylog, p = 2), its target ε^(−d2/(4β)); the general row's
    ε^(−(4+2d1/d2)·min(d1,d2)/(8β)) (anchor) and ε^(−(4+2d2/d1)·min/(8β)) (target)."""
    beta, dims = theory["beta"], theory[world]  # LCGM worlds: their own d_x, d_y
    d1, d2 = dims["d1"], dims["d2"]
    if is_lcgm(world):
        return ("polylog", 2.0) if tower == "f" else ("power", d2 / (4 * beta))
    ratio = d1 / d2 if tower == "f" else d2 / d1
    return "power", (4 + 2 * ratio) * min(d1, d2) / (8 * beta)


def fit_row(runs, cells, world, tower, rows, level, theory) -> dict:
    """One tower's growth fits and shape test on the approximation part's width(ε) (``rows``:
    its :func:`eps_rows`), and the saturation of its excess in width (W2 and W3 read the excess,
    as registered)."""
    widths, excess = _sweep(runs, world, tower, "excess")  # the approximation part's widths too
    power = wn.growth_fit(rows, "power", level)
    poly = wn.growth_fit(rows, "polylog", level)
    sat = saturation.saturation(widths, excess, increasing=False)
    mine = cells[(cells["world"] == world) & (cells["tower"] == tower) & (cells["budget"] == "1x")]
    law, exponent = table2_exponent(world, tower, theory)
    return {
        "world": world,
        "tower": tower,
        "widths": " ".join(str(w) for w in widths),
        "saturation": sat.label,
        "saturation_status": sat.status,
        "saturation_lo": sat.lo,
        "saturation_hi": sat.hi,
        "power_exponent": power["exponent"],
        "power_lo": power["lo"],
        "power_hi": power["hi"],
        "polylog_exponent": poly["exponent"],
        "polylog_lo": poly["lo"],
        "polylog_hi": poly["hi"],
        "n_levels": power["n_levels"],
        "n_segments": wn.segments(rows, widths),
        **wn.shape_test(rows, level, len(widths)),
        "table2_law": law,
        "table2_exponent": exponent,
        "converged": bool(mine["converged"].all()),
        "power_per_seed": power["per_seed"],
    }
