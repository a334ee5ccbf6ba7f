"""Experiment W's pre-registered predictions (docs/widths.md, committed before any width was
trained), judged on the tables of :mod:`.widths`, and the rule ``assemble_widths``.

* **W1** (LCGM, Table 2's tower asymmetry): the width f needs grows more slowly in 1/ε than the
  width g needs: the power exponent q of width(ε) ∝ (1/ε)^q is smaller for f. Judged on the
  per-seed difference q_g − q_f (Student-t interval): holds above 0, fails below, else
  unresolved. A tower that reaches every ε the other reaches already at the smallest width shows
  no growth inside the grid: its q counts as 0. Unresolved on fewer than three widths, or when a
  tower's levels lie on one log-log segment of the grid (an exponent from one segment is a power
  law by construction). Levels crossed and lost again at a wider width are never fitted
  (:mod:`crl_approx.numerics.widths`).
* **W2** (LCGM): f's excess saturates in width no later than g's (the noise-aware saturation
  rule, :mod:`crl_approx.numerics.saturation`): holds when f's range lies wholly at or below
  g's, fails when wholly above, else unresolved; unresolved on fewer than three widths.
* **W3** (mixture, d1 = d2 = 1): both towers saturate by width :data:`.widths.W3_WIDTH`.

W4–W7 (registered 2026-12-04, on the approximation part) are :mod:`.widths_predictions`'.

Every decided verdict on runs that did not converge becomes "unresolved: not converged"
(:func:`.convergence.gate`); on the LCGM also every one whose widest cell a doubled budget
resolvably moves by more than the tolerance (the ``rule`` column keeps the rule's verdict).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from ..numerics import powerlaw, saturation
from ..numerics import widths as wn
from ..numerics.claims import Verdict, combine
from . import widths as w
from .convergence import gate
from .widths_predictions import dim_rows, w4, w5_w6, w7

#: the verdicts a grid that cannot decide gives (each an "unresolved", with its reason)
FEWER_WIDTHS = "unresolved: fewer than three widths"
ONE_SEGMENT = "unresolved: the levels lie on one log-log segment"
TOO_FEW_LEVELS = "unresolved: too few ε reached inside the grid"

log = logging.getLogger(__name__)


def _growth(fit: pd.Series, eps_rows: pd.DataFrame, other_rows: pd.DataFrame) -> np.ndarray:
    """Per-seed power exponents of a tower; 0 where it reaches every ε the other tower reaches,
    each at the smallest width (no growth inside the grid; docs/widths.md, W1 as registered)."""
    per = np.asarray(fit["power_per_seed"], float)
    reached = eps_rows[eps_rows["status"].isin(wn.KEPT)]
    other = set(other_rows.loc[other_rows["status"].isin(wn.KEPT), "eps"])
    at_min = set(reached.loc[reached["status"] == wn.AT_MIN, "eps"])
    if not reached.empty and other <= at_min and len(at_min) == len(reached):
        return np.zeros_like(per)
    return per


def _n_widths(*fits_rows) -> int:
    """The fewest grid widths among the towers' sweeps (fits' ``widths``: "8 32 128")."""
    return min(len(str(t["widths"]).split()) for t in fits_rows)


def w1(fits, eps, level) -> dict:
    f, g = (fits.set_index("tower").loc[t] for t in ("f", "g"))
    ef, eg = eps[eps["tower"] == "f"], eps[eps["tower"] == "g"]
    qf, qg = _growth(f, ef, eg), _growth(g, eg, ef)
    diff = qg - qf
    ok = np.isfinite(diff)
    mean = float(diff[ok].mean()) if ok.any() else math.nan
    lo, hi = powerlaw.t_interval(mean, diff[ok], level)
    n_widths = _n_widths(f, g)
    if n_widths < 3:
        # between two widths every level lies on one log-log segment: a power law by
        # construction, whatever the towers do (the shape test's guard)
        verdict = FEWER_WIDTHS
        measured = f"{n_widths} widths per tower: one log-log segment"
        lo = hi = mean = math.nan
    elif any(
        t["n_segments"] < 2 and np.isfinite(q).any() and not (q == 0).all()
        for t, q in ((f, qf), (g, qg))
    ):
        verdict = ONE_SEGMENT
        measured = (
            f"grid segments holding the levels every seed reaches: f {int(f['n_segments'])}, "
            f"g {int(g['n_segments'])} (a power law fits one segment exactly)"
        )
        lo = hi = mean = math.nan
    elif not (math.isfinite(lo) and math.isfinite(hi)):
        verdict = TOO_FEW_LEVELS
        measured = (
            f"ε levels every seed reaches by interpolation (neither at the smallest width nor "
            f"lost at a wider one): f {int(f['n_levels'])}, g {int(g['n_levels'])} (a growth "
            f"exponent needs 2, in at least two seeds)"
        )
    else:
        verdict = Verdict.HOLDS if lo > 0 else Verdict.FAILS if hi < 0 else Verdict.UNRESOLVED
        measured = (
            f"q_g − q_f = {mean:.3g} [{lo:.3g}, {hi:.3g}] over {int(ok.sum())} seeds "
            f"(q_f = {np.nanmean(qf[ok]):.3g}, q_g = {np.nanmean(qg[ok]):.3g})"
        )
    converged = bool(f["converged"] and g["converged"])
    return {
        "prediction": "W1",
        "world": "lcgm",
        "statement": "the width f needs grows more slowly in 1/ε than the width g needs "
        "(power exponent q_f < q_g)",
        "measured": measured,
        "verdict": gate(verdict, converged),
        "converged": converged,
        "value": mean,
        "lo": lo,
        "hi": hi,
    }


def _saturation_text(fits) -> str:
    """Each tower's saturation width, its range first: "f: 1–8 (point unresolved), g: 4" (the
    rule's label "unresolved (1–8)" read as a non-answer beside a verdict its range decides)."""
    each = []
    for r in fits.itertuples():
        text = r.saturation
        if r.saturation_status == saturation.UNRESOLVED:
            hi = float(r.saturation_hi)
            span = f"{r.saturation_lo:g}–{hi:g}" if math.isfinite(hi) else f"≥ {r.saturation_lo:g}"
            text = f"{span} (point unresolved)"
        each.append(f"{r.tower}: {text}")
    return "saturation width " + ", ".join(each)


def w2(fits) -> dict:
    f, g = (fits.set_index("tower").loc[t] for t in ("f", "g"))
    if _n_widths(f, g) < 3:
        # on two widths the saturation rule's trend check extends one segment: any resolvable
        # fall reads "not saturated", and a tie at the grid's end would decide the order
        verdict = FEWER_WIDTHS
    elif f["saturation_hi"] <= g["saturation_lo"]:
        verdict = Verdict.HOLDS
    elif f["saturation_lo"] > g["saturation_hi"]:
        verdict = Verdict.FAILS
    else:
        verdict = Verdict.UNRESOLVED
    converged = bool(f["converged"] and g["converged"])
    return {
        "prediction": "W2",
        "world": "lcgm",
        "statement": "f's excess saturates in width no later than g's",
        "measured": _saturation_text(fits),
        "verdict": gate(verdict, converged),
        "converged": converged,
        "value": math.nan,
        "lo": math.nan,
        "hi": math.nan,
    }


def w3(fits) -> dict:
    """Both towers must saturate by W3_WIDTH: one tower's converged miss falsifies it, whatever
    the other's runs did; each tower's reading is gated by its own cells' convergence."""
    each = []
    for row in fits.itertuples():
        sat = saturation.Saturation(
            row.saturation_status, None, row.saturation_lo, row.saturation_hi, "", ""
        )
        each.append(gate(saturation.consistent(sat, (1, w.W3_WIDTH)), bool(row.converged)))
    verdict = combine(each)
    # the convergence of what decided it: a miss is decided by converged towers only
    converged = True if verdict == Verdict.FAILS else bool(fits["converged"].all())
    return {
        "prediction": "W3",
        "world": "gmm",
        "statement": f"both towers' excess saturates by width {w.W3_WIDTH}",
        "measured": _saturation_text(fits),
        "verdict": verdict,
        "converged": converged,
        "value": math.nan,
        "lo": math.nan,
        "hi": math.nan,
    }


def budget_agrees(rule: str, rule_2x) -> str:
    """The LCGM's statistic-level budget gate (widths.budget_check_scope ``sweeps``): a decided
    verdict at the budget stands where the same registered rule, on every LCGM cell trained at
    twice the steps, reads the same (the guide's "a 2x budget agrees"); a decided verdict the
    doubled budget does not repeat is "unresolved: not converged". It can only take a decision
    back, never make one: an undecided verdict at the budget stays as it is."""
    if rule not in (Verdict.HOLDS, Verdict.FAILS) or rule_2x == rule:
        return rule
    return gate(rule, converged=False)


def verdicts(
    fits, eps, runs, cells, level, dims=(), budget_moves=False, doubled=None
) -> pd.DataFrame:
    """Every prediction's row; ``rule`` is the verdict its registered rule gives, ``verdict`` the
    same after the LCGM's doubled-budget gate. With ``doubled`` (prediction → its verdict on the
    LCGM cells at twice the steps, budget_check_scope ``sweeps``; :func:`doubled_verdicts`) a
    decided LCGM verdict stands where that one agrees (:func:`budget_agrees`); without it, where
    ``budget_moves`` (twice the steps resolvably move the widest LCGM cell's excess by more
    than the tolerance, :func:`.widths.budget_moves`) a decided LCGM verdict is "unresolved: not
    converged" (amendment of 2026-12-05). ``rule_2x`` is the doubled budget's verdict ("" where
    not measured), ``value_2x``, ``lo_2x``, ``hi_2x`` its statistic."""
    rows = []
    lcgm, gmm = (fits[fits["world"] == x] for x in ("lcgm", "gmm"))
    if set(lcgm["tower"]) == {"f", "g"}:
        main = eps[eps["world"] == "lcgm"]
        rows += [w1(lcgm, main, level), w2(lcgm), w4(main, lcgm, level)]
        rows += w5_w6(list(dims))
    if not gmm.empty:
        rows += [w3(gmm), w7(runs, cells, level)]
    for r in rows:
        r["rule"], r["rule_2x"] = r["verdict"], ""
        r["value_2x"] = r["lo_2x"] = r["hi_2x"] = math.nan
        if not w.is_lcgm(r["world"]):
            continue
        if doubled is not None:
            at = doubled.get(r["prediction"], {})
            r["rule_2x"] = at.get("rule", "")
            r |= {f"{k}_2x": at.get(k, math.nan) for k in ("value", "lo", "hi")}
            r["verdict"] = budget_agrees(r["verdict"], r["rule_2x"])
            r["converged"] = r["converged"] and r["verdict"] == r["rule"]
        elif budget_moves:
            r["verdict"] = gate(r["verdict"], converged=False)
            r["converged"] = False
    return pd.DataFrame(rows)


def doubled_verdicts(runs, rank_floor, cells, widths: dict, design, default_width, limits):
    """Prediction → its registered rule's verdict (gated by its cells' own convergence) and
    statistic ({"rule", "value", "lo", "hi"}) on the LCGM cells trained at twice the steps
    (budget_check_scope ``sweeps``): every LCGM world's 2x cells read as its cells (the
    mixture's unchanged), its floor the 2x widest cell's, its ε read at the larger of the two
    budgets' reading limits (``limits``: the budget's; the same levels compared at both). None
    where no sweep cell ran at twice the steps."""
    lcgm = runs["world"].map(w.is_lcgm)
    two = runs[lcgm & (runs["budget"] == "2x")]
    if two[two["tower"] != "both"].empty:
        return None
    runs2 = pd.concat([runs[~lcgm], two.assign(budget="1x")], ignore_index=True)
    floor2 = w.floors(runs2, rank_floor, widths["gmm_dim"], widths["ci_level"])
    runs2 = w.with_approximation(runs2, floor2)
    own = floor2.set_index("world")["read_limit"].to_dict()
    limits2 = {world: max(limits[world], own[world]) for world in own}
    table2 = w.cell_table(runs2, default_width, limits2)
    cells2 = [c for c in cells if c[3] == "1x"]
    verdict2 = tables(runs2, table2, cells2, widths, design, limits2)[3]
    lcgm_rows = verdict2[verdict2["world"].map(w.is_lcgm)]
    keys = ("rule", "value", "lo", "hi")
    return {r["prediction"]: {k: r[k] for k in keys} for r in lcgm_rows.to_dict("records")}


def ladder_of(config: dict) -> dict:
    """Each world's ε ladder: the LCGM worlds' ``widths.eps`` (theory.eps's, the one W1 was
    registered on), the mixture's ``widths.gmm_eps`` (its own scale)."""
    return {"lcgm": config["eps"], "gmm": config["gmm_eps"]}


def tables(
    runs, table, cells, config: dict, design: dict, limits: dict, budget_moves=False, doubled=None
):
    """Width to ε (each world on its own ladder, read on the approximation part at or above the
    world's reading limit, ``limits``: world → read_limit of the floors table), the fits (on the
    same readings), the dimension sweep and the verdicts of the runs (``budget_moves``: the
    floors table's, the LCGM's doubled-budget gate)."""
    level = config["ci_level"]
    sweeps = sorted({(c[0], c[1]) for c in cells if c[1] != "both"})
    ladders = ladder_of(config)
    rows = {
        (world, tower): w.eps_rows(
            runs, world, tower, ladders["lcgm" if w.is_lcgm(world) else "gmm"], limits[world]
        )
        for world, tower in sweeps
    }
    eps = pd.DataFrame([r for s in sweeps for r in rows[s]])
    fits = pd.DataFrame([w.fit_row(runs, table, *s, rows[s], level, design) for s in sweeps])
    levels = config["dim_sweep"]["eps"]
    dims = dim_rows(eps, fits, design, levels, level) if "lcgm" in set(eps["world"]) else []
    verdict = verdicts(fits, eps, runs, table, level, dims, budget_moves, doubled)
    return eps, fits, pd.DataFrame(dims, columns=DIM_COLUMNS), verdict


#: the dimension sweep's table columns
DIM_COLUMNS = [
    "world", "tower", "d0", "d", "factor_c", "levels", "ratio", "ratio_lo", "ratio_hi",
    "converged", "reading",
]  # fmt: skip


def run_assemble(
    metric_paths, floor_paths, widths: dict, cells, seeds, design, default_width, output
):
    """The ``assemble_widths`` rule: runs, floors, cells, width to ε, fits, the dimension sweep
    and the verdicts."""
    from ..runtime import write_csv

    rank_floor = pd.read_csv(floor_paths[0]) if floor_paths else None
    raw = w.runs_table(metric_paths, cells, seeds)
    floor_table = w.floors(raw, rank_floor, widths["gmm_dim"], widths["ci_level"])
    runs = w.with_approximation(raw, floor_table)
    limits = floor_table.set_index("world")["read_limit"].to_dict()
    moves = w.floors_move(floor_table)
    doubled = doubled_verdicts(raw, rank_floor, cells, widths, design, default_width, limits)
    if doubled is not None:  # every LCGM cell at 2x: each against its own budget's floor
        runs = w.with_doubled_floors(runs, floor_table)
    table = w.cell_table(runs, default_width, limits)
    eps, fits, dims, verdict = tables(runs, table, cells, widths, design, limits, moves, doubled)
    for row in verdict.itertuples():
        log.info("%s (%s): %s — %s", row.prediction, row.world, row.verdict, row.measured)
    write_csv(runs.drop(columns="val_losses"), output.runs)
    write_csv(table, output.table)
    write_csv(floor_table, output.floors)
    write_csv(eps.drop(columns=["seed_widths", "seed_status"], errors="ignore"), output.eps)
    write_csv(fits.drop(columns="power_per_seed"), output.fits)
    write_csv(dims, output.dims)
    write_csv(verdict, output.verdicts)
    return verdict
