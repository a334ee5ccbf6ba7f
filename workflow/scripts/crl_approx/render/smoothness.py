"""Experiment S in the report: the worlds (β, the fitted decay of the PMI operator's eigenvalues
and the growth of D(ε)), the truncation's D for each ε of the ladder, the trained cells, and the
claims S1–S4 from the claims table (:mod:`crl_approx.numerics.claims`). Verdicts are read only
from that table's ``verdict`` column; each claim also joins the report's summary."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from ..numerics.claims import Kind, Verdict, css
from .verdicts import fmt, fmt_sd, mean_sd

#: the tables, in :func:`context`'s order (results/tables/smoothness_<name>.csv; the
#: build_report inputs smoothness_<name>)
TABLES = ("worlds", "eps", "trained", "claims")
MISSING = "—"
NAN = re.compile(r"\bnan\b")


def _finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _g(value, spec: str = "g") -> str:
    return format(float(value), spec) if _finite(value) else MISSING


def _text(value: str) -> str:
    """A text cell of the claims table (read as text): "—" for an empty one or a missing number."""
    return NAN.sub(MISSING, value.strip()) or MISSING


def files(inputs) -> list:
    """The four tables among build_report's inputs, in :func:`context`'s order."""
    return [getattr(inputs, f"smoothness_{name}") for name in TABLES]


def _world(r) -> dict:
    b = float(r.beta)
    rank = int(r.rank) if _finite(r.rank) else None
    gamma = MISSING
    if _finite(r.gamma):
        gamma = f"{r.gamma:.3g}" + (
            f" [{r.gamma_lo:.3g}, {r.gamma_hi:.3g}]" if _finite(r.gamma_lo) else ""
        )
    elif rank is not None and r.finite_rank:
        gamma = f"{MISSING} (rank {rank})"
    alpha = MISSING if not _finite(r.alpha) else f"{r.alpha:.3g} ({int(r.alpha_levels)} levels)"
    return {
        "key": {"beta": r.beta},
        "beta": f"{b:g}",
        "scale": _g(r.scale, ".4g"),
        "mi": _g(r.mutual_information_grid, ".4g"),
        "gamma": gamma,
        "predicted": _g(r.gamma_predicted) if b < 2 else "rank 3",
        "window": f"{int(r.fit_from)}–{int(r.fit_to)}"
        if _finite(r.fit_to) and r.fit_to
        else MISSING,
        "alpha": alpha,
        "table2": _g(r.alpha_table2, ".3g"),
        "ours": _g(r.alpha_predicted, ".3g"),
    }


def _ladder(eps: pd.DataFrame, betas: list, max_dim) -> list[dict]:
    """One row per ε: per world the truncation's D (">" max_dim where none reaches ε, "†" where
    the two quadratures disagree at that D)."""
    over = f"> {max_dim}" if max_dim is not None else "> max_dim"
    rows = []
    for e, g in eps.groupby("eps", sort=False):
        by = g.set_index("beta")
        cells = []
        for b in betas:
            if b not in by.index:
                cells.append({"key": None, "text": MISSING})
                continue
            r = by.loc[b]
            text = f"{int(r.D_needed)}" if _finite(r.D_needed) else over
            cells.append(
                {"key": {"beta": b, "eps": e}, "text": text + ("" if r.converged else " †")}
            )
        rows.append({"key": {"beta": betas[0], "eps": e}, "eps": f"{e:g}", "cells": cells})
    return rows


def _trained(r) -> dict:
    best = getattr(r, "best_at_end", "")
    return {
        "key": {"beta": r.beta, "D": int(r.D)},
        "beta": f"{float(r.beta):g}",
        "D": int(r.D),
        "excess": mean_sd(r.excess_mean, r.excess_sd, fmt, fmt_sd),
        "n": int(r.n_seeds),
        # a floor stopped by the L-BFGS budget is an upper bound on the best rank-D excess
        "floor": fmt(r.floor) if getattr(r, "floor_converged", True) else f"≤ {fmt(r.floor)}",
        # training still improving at the gap's scale: the part above the floor an upper bound
        "above": ("" if getattr(r, "above_floor_converged", True) else "≤ ") + fmt(r.above_floor)
        if _finite(r.above_floor)
        else MISSING,
        "converged": ("yes" if r.converged else "no") + (f" (best at end {best})" if best else ""),
    }


def floor_grid(curves: pd.DataFrame) -> dict:
    """The floor of every world by D (the curves table's ``floor`` rows): β's as columns, one row
    per D; "≤" marks a floor that is not converged (an upper bound: the rule is
    :func:`crl_approx.numerics.smoothness.floor_converged`), "0" an exact zero."""
    fl = curves[curves["kind"] == "floor"]
    betas = sorted(fl["beta"].unique())
    rows = []
    for d in sorted(fl["x"].unique()):
        cells = []
        for b in betas:
            r = fl[(fl["beta"] == b) & (fl["x"] == d)]
            if r.empty:
                cells.append(MISSING)
                continue
            v, ok = float(r["value"].iloc[0]), bool(r["converged"].iloc[0])
            cells.append(("" if ok else "≤ ") + (fmt(v) if v > 1e-15 else "0"))
        rows.append({"D": int(d), "cells": cells})
    return {"betas": [f"{b:g}" for b in betas], "rows": rows}


def claim_rows(claims_csv) -> list[dict]:
    """The claims table's rows as printed (text cells "—" where empty), with the css class of each
    verdict."""
    table = pd.read_csv(claims_csv, dtype=str, keep_default_na=False)
    rows = []
    for r in table.to_dict("records"):
        verdict = Verdict(r["verdict"])
        rows.append(
            {k: _text(v) for k, v in r.items()}
            | {"key": {"id": r["id"]}, "verdict": str(verdict), "css": css(verdict)}
            | {"paper_claim": r["kind"] == Kind.PAPER, "registered": r["registered"]}
        )
    return rows


def context(worlds_csv, eps_csv, trained_csv, claims_csv, max_dim=None) -> dict | None:
    """The section's rows from the four tables (None when the run has no Experiment S)."""
    if not all(Path(p).exists() for p in (worlds_csv, eps_csv, trained_csv, claims_csv)):
        return None
    worlds = pd.read_csv(worlds_csv).sort_values("beta", ignore_index=True)
    eps, trained = pd.read_csv(eps_csv), pd.read_csv(trained_csv)
    betas = [float(b) for b in worlds["beta"]]
    return {
        "betas": [f"{b:g}" for b in betas],
        "worlds": [_world(r) for r in worlds.itertuples()],
        "ladder": _ladder(eps, betas, max_dim),
        "unconverged": bool((~eps["converged"].astype(bool)).any()),
        "trained": [_trained(r) for r in trained.itertuples()],
        "claims": claim_rows(claims_csv),
    }


#: one summary line per group of claims (the id's first word and kind): what the group states
