"""Experiment W in the report: the excess against one tower's width with its world's floor and
the approximation part above it, the floors, the width-to-ε table, the fitted growth with the shape
test, the dimension sweep, and the pre-registered predictions' verdicts (which also join the
summary)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..numerics.widths import AT_MIN, BELOW, NOT_REACHED, REACHED
from .verdicts import fmt, fmt_sd, mean_sd


def world_name(world: str) -> str:
    """ "LCGM, D = K", "LCGM, d = 64" (the dimension sweep's d_x = d_y = d), "mixture"."""
    if world.startswith("lcgm_d"):
        return f"LCGM, d = {world.removeprefix('lcgm_d')}"
    return {"lcgm": "LCGM, D = K", "gmm": "mixture"}.get(world, world)


def _width(value: float, status: str, w_min) -> str:
    if status == BELOW:
        return "below the floor: not read"
    if status == NOT_REACHED:
        return "not reached"
    if status == AT_MIN:
        return f"≤ {w_min:g}"
    return f"{value:.3g}" + ("" if status == REACHED else ", lost")


def _spread(r) -> str:
    """The seeds' first crossings: "—" when none crosses, "≤" where a seed is at the smallest
    width."""
    if not math.isfinite(r.seed_lo):
        return "—"
    lo = ("≤ " if getattr(r, "seeds_at_min", 0) else "") + f"{r.seed_lo:.3g}"
    hi = "∞" if not math.isfinite(r.seed_hi) else f"{r.seed_hi:.3g}"
    return lo if r.seed_hi == r.seed_lo else f"{lo}–{hi}"


def _interval(est, lo, hi) -> str:
    if not math.isfinite(est):
        return "—"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{est:.3g}"
    return f"{est:.3g} [{lo:.3g}, {hi:.3g}]"


def context(table_csv, eps_csv, fits_csv, verdicts_csv, floors_csv, dims_csv) -> dict | None:
    """The section's rows from the six tables (None when the run has no width sweep)."""
    if not Path(table_csv).exists():
        return None
    table, eps = pd.read_csv(table_csv), pd.read_csv(eps_csv)
    fits, verdicts = pd.read_csv(fits_csv), pd.read_csv(verdicts_csv)
    floors, dims = pd.read_csv(floors_csv), pd.read_csv(dims_csv)
    cells = [
        {
            "world": world_name(r.world),
            "key": dict(world=r.world, tower=r.tower, width=r.width, budget=r.budget),
            "tower": r.tower,
            "width": r.width,
            "budget": r.budget,
            "excess": mean_sd(r.excess_mean, r.excess_sd, fmt, fmt_sd),
            "floor": fmt(r.floor),
            "approx": mean_sd(r.approx_mean, r.approx_sd, fmt, fmt_sd),
            "reused": "existing run" if r.reused else "trained here",
            "converged": f"{'yes' if r.converged else 'no'} (best at end {r.best_at_end})",
        }
        for r in table.itertuples()
    ]
    floor_rows = [
        {
            "world": world_name(r.world),
            "key": dict(world=r.world),
            "floor": fmt(r.floor),
            "kind": r.floor_kind,
            "widest": mean_sd(r.widest_excess, r.widest_sd, fmt, fmt_sd),
            "budget": "—" if not math.isfinite(r.budget_excess) else fmt(r.budget_excess),
            "drop": _interval(r.budget_drop, r.budget_drop_lo, r.budget_drop_hi),
            "limit": fmt(r.read_limit),
        }
        for r in floors.itertuples()
    ]
    dim_rows = [
        {
            "world": world_name(r.world),
            "key": dict(world=r.world, tower=r.tower),
            "tower": r.tower,
            "dims": f"{r.d0} → {r.d}",
            "levels": r.levels if isinstance(r.levels, str) else "—",
            "ratio": _interval(r.ratio, r.ratio_lo, r.ratio_hi),
            "c": f"{r.factor_c:.3g}",
            "reading": r.reading,
        }
        for r in dims.itertuples()
    ]
    w_min = table.groupby(["world", "tower"])["width"].min()
    ladder = [
        {
            "world": world_name(r.world),
            "key": dict(world=r.world, tower=r.tower, eps=r.eps),
            "tower": r.tower,
            "eps": f"{r.eps:g}",
            "width": _width(r.width, r.status, w_min[(r.world, r.tower)]),
            "spread": _spread(r),
            "seeds": int(r.seeds_reaching),
        }
        for r in eps.itertuples()
    ]
    growth = [
        {
            "world": world_name(r.world),
            "key": dict(world=r.world, tower=r.tower),
            "tower": r.tower,
            "saturation": r.saturation,
            "power": _interval(r.power_exponent, r.power_lo, r.power_hi),
            "polylog": _interval(r.polylog_exponent, r.polylog_lo, r.polylog_hi),
            "levels": int(r.n_levels),
            "shape": r.shape,
            "table2": (
                f"log^{r.table2_exponent:g}(1/ε)"
                if r.table2_law == "polylog"
                else f"ε^(−{r.table2_exponent:.3g})"
            ),
            "converged": "yes" if r.converged else "no",
        }
        for r in fits.itertuples()
    ]
    return {
        "cells": cells,
        "floors": floor_rows,
        "dims": dim_rows,
        "ladder": ladder,
        "growth": growth,
        "verdicts": verdicts.to_dict("records"),
    }
