"""Experiment W's pre-registered predictions: W1–W3 (docs/widths.md, 2026-12-01) and W4–W7
(2026-12-04, issue 36; W5 is Table 2's LCGM row read on dimensions, the paper's claim), with what
each world's grid can decide."""

from __future__ import annotations

import math

from ...numerics.claims import Decidable, How, Kind, Verdict, gate
from .. import widths
from .. import widths_predictions as wp
from .. import widths_verdicts as wv
from .base import SHORT, as_verdict, row

#: the date each prediction was registered (docs/widths.md)
REGISTERED = {"W1": "2026-12-01", "W2": "2026-12-01", "W3": "2026-12-01"}
REGISTERED |= dict.fromkeys(("W4", "W5", "W6", "W7"), "2026-12-04")
#: the paper's claim among them: Table 2's LCGM row, read on the input dimensions
PAPER = {"W5": "Table 2, LCGM row: f log²(1/ε), g ε^(−d₂/(4β))"}
WORLDS = {"lcgm": "LCGM", "gmm": "mixture"}
#: the verdicts of a grid that cannot decide, and why (the claims row's ``decidable``)
UNDECIDABLE = {
    wv.FEWER_WIDTHS: "fewer than three widths per tower in the grid",
    wv.ONE_SEGMENT: "the ε levels lie on one log-log segment of the grid",
    wv.TOO_FEW_LEVELS: "too few ε levels reached inside the grid",
}
#: why the LCGM's verdicts are undecidable where the widest cell's 2× budget gates them all
#: (budget_check_scope widest, the amendment of 2026-12-05; docs/widths.md's floor benchmark)
FLOOR_MOVES = "the widest LCGM cell still falls at 2× steps: no LCGM verdict reads as converged"


def _floor_gated(r) -> bool:
    """Whether the LCGM's blanket budget gate (scope widest) took this decided verdict back."""
    return (
        r.world == "lcgm"
        and not _doubled(r)
        and r.verdict == Verdict.NOT_CONVERGED
        and _short(r.rule) in (Verdict.HOLDS, Verdict.FAILS)
    )


def _ends(t, world: str) -> str:
    """Each tower's approximation part at its narrowest and widest grid width below the widest
    cell, "f 0.28 → 0.0012, g 0.64 → 0.0019 (widths 2–16)"."""
    w = t["widths"]
    w = w[(w["world"] == world) & w["tower"].isin(["f", "g"]) & ~w["widest"].astype(bool)]
    if "budget" in w:  # the budget's cells (scope sweeps lists them at 2x too)
        w = w[w["budget"] == "1x"]
    parts, grid = [], set()
    for tower, c in w.sort_values("width").groupby("tower"):
        parts.append(f"{tower} {c['approx_mean'].iloc[0]:.2g} → {c['approx_mean'].iloc[-1]:.2g}")
        grid.add((int(c["width"].iloc[0]), int(c["width"].iloc[-1])))
    if not parts:
        return ""
    text = ", ".join(parts)
    if len(grid) == 1:
        lo, hi = grid.pop()
        text += f" (widths {lo}–{hi})"
    return text


def _floor(t, world: str, budget: bool = True) -> str:
    """The world's floor in a few words: "floor 0.0065 (0.0044 at 2× steps)", "floor 4.6e-04"
    (without the doubled budget's where ``budget`` is false: a reading that says how it moved)."""
    f = t["widths_floors"]
    f = f[f["world"] == world]
    if f.empty:
        return ""
    r = f.iloc[0]
    text = f"floor {r['floor']:.2g}"
    if budget and math.isfinite(r["budget_excess"]):
        text += f" ({r['budget_excess']:.2g} at 2× steps)"
    return text


def _budget(t, config) -> tuple[str, bool]:
    """Whether the reused mixture cell at train.width passes the dynamics' 2x budget check (the
    same run as Table 1's population cell at D = widths.gmm_dim, which the Table 1 row gates by
    it too): ("", False) where it agrees; what moved and True where it does not; and where the
    check did not run at that D (``dynamics.budget_dims`` leaves it out), a note that says so and
    False: the rule stands, unchecked. The check compares the alignment statistic (the
    features), not the excess W3 reads: a cell whose features still move at twice the budget is
    not read as a converged miss (a rule of 2026-12-03, after the numbers; docs/widths.md)."""
    d = t["dynamics"]
    cfg = config["widths"]
    r = d[(d["objective"] == cfg["gmm_objective"]) & (d["D"] == cfg["gmm_dim"])]
    width = config["train"]["width"]
    if not len(r) or r.iloc[0]["budget_agrees"] not in (True, False, "True", "False"):
        return f"; {width} not checked at 2×", False
    if r.iloc[0]["budget_agrees"] not in (False, "False"):
        return "", False
    r = r.iloc[0]
    moved = f"{r['alignment_statistic']:.2f}→{r['alignment_statistic_2b']:.2f}"
    return f"; {width} unconverged (2× budget: cos² {moved})", True


def _doubled(r) -> str:
    """The prediction's verdict on every LCGM cell at twice the steps (budget_check_scope
    sweeps), "" where not measured (the CSV reads an empty cell back as NaN)."""
    v = getattr(r, "rule_2x", "")
    return v if isinstance(v, str) else ""


def _dim_parts(t, predicate, verdict_row) -> list[tuple[str, Verdict]]:
    """W5's and W6's parts from the dimension sweep's table: (label, the part's verdict), each
    gated as ``verdict_row`` is (its cells' convergence and the LCGM's doubled-budget gate: with
    every cell at twice the steps, unless the prediction's rule reads the same there)."""
    moves = widths.floors_move(t["widths_floors"])
    if doubled := _doubled(verdict_row):  # the parts stand where the row's decision does
        rule = verdict_row.rule
        moves = not (doubled == rule and _short(rule) in (Verdict.HOLDS, Verdict.FAILS))
    out = []
    for r in t["widths_dims"].to_dict("records"):
        grows = predicate(r["tower"])
        if grows is None:
            continue
        converged = r["converged"] in (True, "True") and not moves
        part = wp.dim_part(r | {"converged": converged}, grows)
        out.append((f"{r['tower']}, d={r['d']}", part))
    return out


def _dims(t, towers) -> str:
    """The dimension sweep in a few words: "g ×1.1, f ×0.93 from d 16 to 64 (c = 1.5)"."""
    d = t["widths_dims"]
    d = d[d["tower"].isin(towers)]
    if d.empty:
        return "no dimension sweep"
    each = [
        f"{r['tower']} ×{r['ratio']:.2g}" if math.isfinite(r["ratio"]) else f"{r['tower']} unread"
        for r in d.to_dict("records")
    ]
    r = d.iloc[0]
    return f"{', '.join(each)} from d {r['d0']} to {r['d']} (c = {r['factor_c']:.2g})"


def _short(verdict: str) -> Verdict:
    """A verdict cell as a :class:`Verdict`, a grid's "unresolved: <reason>" as unresolved."""
    return Verdict.UNRESOLVED if verdict in UNDECIDABLE else as_verdict(verdict)


def _moved(t, r) -> str:
    """Where the LCGM's doubled-budget gate turned a decided verdict (``rule``) into "not
    converged": how far twice the steps move the floor, and the rule's verdict, in a few words
    ("; 2× steps: floor −35 % [−46 %, −24 %]; rule: holds"); with every cell at twice the steps
    (budget_check_scope sweeps) what the rule reads there ("; 2× steps: holds again",
    "; 2× steps: unresolved; rule: holds"); "" elsewhere."""
    if doubled := _doubled(r):
        # W5's and W6's statistic, g's growth factor, at 2x: how far the doubling moved it
        value = float(getattr(r, "value_2x", math.nan))
        g = f"g ×{value:.2g}, " if r.prediction in ("W5", "W6") else ""
        if g and not math.isfinite(value):
            g = "g unread, "
        if _short(r.rule) == _short(doubled):
            return f"; 2× steps: {g}{SHORT[_short(doubled)]} again"
        return f"; 2× steps: {g}{SHORT[_short(doubled)]}; rule: {SHORT[_short(r.rule)]}"
    if r.rule == r.verdict or r.rule in UNDECIDABLE:
        return ""
    f = t["widths_floors"].set_index("world").loc["lcgm"]
    w = f["widest_excess"]
    lo, hi = -f["budget_drop_hi"] / w, -f["budget_drop_lo"] / w
    return (
        f"; 2× steps: floor {-f['budget_drop'] / w:+.0%} [{lo:+.0%}, {hi:+.0%}]; "
        f"rule: {SHORT[as_verdict(r.rule)]}"
    )


def _reading(t, r, config) -> tuple[str, Verdict]:
    """The data's reading of one prediction in a few words, and its verdict (the mixture's
    readings gated by the reused cell's 2× budget check, W3's registered rule, the LCGM's by
    the widest cell's, the amendment of 2026-12-05; a grid that cannot decide is unresolved)."""
    verdict = Verdict.UNRESOLVED if r.verdict in UNDECIDABLE else as_verdict(r.verdict)
    if r.prediction in ("W5", "W6"):
        return _dims(t, ("f", "g") if r.prediction == "W5" else ("g",)) + _moved(t, r), verdict
    if r.prediction == "W4":
        moved = _moved(t, r)
        return _floor(t, "lcgm", budget=not moved) + "; " + _ends(t, "lcgm") + moved, verdict
    if r.world == "lcgm":
        return _ends(t, r.world) + _moved(t, r), verdict
    reading = _ends(t, r.world)
    if r.world == "gmm":
        reading = f"{_floor(t, 'gmm')}; above it {reading}"
        budget, unconverged = _budget(t, config)
        if unconverged:
            # the reused cell at train.width did not converge (its 2x budget moves it): neither a
            # miss nor a hit on it is a verdict; the rule's own reading is kept beside it
            registered, verdict = verdict, gate(verdict, converged=False)
            if registered != verdict:
                budget += f"; rule: {SHORT[registered]}"
        reading += budget
    return reading, verdict


def claims(t, config) -> list[dict]:
    out = []
    for r in t["widths_verdicts"].itertuples():
        reason = UNDECIDABLE.get(r.verdict) or (FLOOR_MOVES if _floor_gated(r) else None)
        reading, verdict = _reading(t, r, config)
        parts = ()
        if r.prediction == "W5":
            parts = _dim_parts(t, lambda tower: tower == "g", r)
        elif r.prediction == "W6":
            parts = _dim_parts(t, lambda tower: False if tower == "g" else None, r)
        paper = PAPER.get(r.prediction)
        out.append(
            row(
                id=r.prediction,
                statement=f"{WORLDS.get(r.world, r.world)}: {r.statement}",
                kind=Kind.PAPER if paper else Kind.PREDICTION,
                registered=REGISTERED[r.prediction],
                how=How.OURS,
                measured=r.measured,
                value=r.value,
                lo=r.lo,
                hi=r.hi,
                paper=paper or "— (our prediction, from Table 2)",
                verdict=verdict,
                decidable=Decidable.NO if reason else "",
                why=reason or "",
                reading=reading,
                parts=parts,
                section="widths",
                table="widths_verdicts",
                column="measured, verdict",
            )
        )
    return out
