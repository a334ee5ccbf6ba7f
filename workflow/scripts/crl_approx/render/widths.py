"""Experiment W in the report: the excess against one tower's width, the width-to-ε table, the
fitted growth with the shape test, and the pre-registered predictions' verdicts (which also join
the summary under "our own predictions")."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..numerics.widths import AT_MIN, NOT_REACHED, REACHED
from .verdicts import fmt, fmt_sd, mean_sd

WORLD_NAMES = {"lcgm": "LCGM, D = K", "gmm": "mixture"}


def _width(value: float, status: str, w_min) -> str:
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


def context(table_csv, eps_csv, fits_csv, verdicts_csv) -> dict | None:
    """The section's rows from the four tables (None when the run has no width sweep)."""
    if not Path(table_csv).exists():
        return None
    table, eps = pd.read_csv(table_csv), pd.read_csv(eps_csv)
    fits, verdicts = pd.read_csv(fits_csv), pd.read_csv(verdicts_csv)
    cells = [
        {
            "world": WORLD_NAMES.get(r.world, r.world),
            "key": dict(world=r.world, tower=r.tower, width=r.width, data=r.data),
            "tower": r.tower,
            "width": r.width,
            "data": r.data,
            "excess": mean_sd(r.excess_mean, r.excess_sd, fmt, fmt_sd),
            "reused": "existing run" if r.reused else "trained here",
            "converged": f"{'yes' if r.converged else 'no'} (best at end {r.best_at_end})",
        }
        for r in table.itertuples()
    ]
    w_min = table.groupby(["world", "tower"])["width"].min()
    ladder = [
        {
            "world": WORLD_NAMES.get(r.world, r.world),
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
            "world": WORLD_NAMES.get(r.world, r.world),
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
        "ladder": ladder,
        "growth": growth,
        "verdicts": verdicts.to_dict("records"),
    }
