"""Experiment S's claims (docs/smoothness.md): its assembly writes them as a claims table, one row
per world; here each claim is one row and its worlds are its parts."""

from __future__ import annotations

import math

from ...numerics.claims import Decidable, Kind, Verdict, combine, decided
from .base import g3, row


def _undecided(rows) -> list[dict]:
    return [r for r in rows if r["decidable"] in (Decidable.NO, Decidable.IN_PART)]


#: the statement of a claim made of one row per world (each row states its world's case)
STATEMENTS = {
    "S2": "λ_i ∝ i^(−γ), γ ≈ 2β + 2 (±10 %), rising with β; rank 3 at β = 2",
    "S3a": "D(ε) grows no faster than Table 2's ε^(−1/(2β))",
    "S3b": "D(ε) grows like ε^(−α), α within 20 % of 1/(2β + 1)",
    "S4": "trained excess: no plateau before the largest D (roughest), one by D = 4 (Gaussian)",
}
#: the paper's side of a claim made of one row per world, where the worlds' bounds differ
PAPER = {"S3a": "≤ 1/(2β) in every world with β < 2 (Table 2)"}
#: the paper cell of a row that is not the paper's claim
NOT_THE_PAPERS = {Kind.PREDICTION: "— (our prediction)", Kind.POST_HOC: "— (post hoc)"}


def _decidable(rows, parts) -> tuple[str, str]:
    """(decidable, why): yes; where no part is decided, the first undecided part's reason; where
    some are, in part, with the undecided parts' reasons ("β=0.5: …; β=1: …")."""
    undecided = _undecided(rows)
    if not undecided:
        return Decidable.YES, ""
    if not any(decided(v) for _, v in parts) or len(rows) == 1:
        return Decidable(undecided[0]["decidable"]), undecided[0]["why"]
    return Decidable.IN_PART, "; ".join(f"{r['part']}: {r['why']}" for r in undecided)


def _label(r) -> str:
    return r["part"] or r["id"]


def _part(r) -> str:
    """A world's measurement: its own words where short (\"rank 3\"), else its value."""
    value, measured = r["value"], str(r["measured"])
    short = len(measured.split()) <= 3 or not (isinstance(value, float) and math.isfinite(value))
    return f"{_label(r)}: {measured if short else g3(value)}"


def claims(t, config) -> list[dict]:
    # a claim of one row has no part, a decided one no why: empty cells, not NaN
    table = t["smoothness_claims"].fillna({c: "" for c in ("claim", "part", "decidable", "why")})
    out = []
    for claim, rows in table.groupby("claim", sort=False):
        rows = rows.to_dict("records")
        first = rows[0]
        parts = [(_label(r), Verdict(r["verdict"])) for r in rows]
        undecided = _undecided(rows)
        if len(rows) == 1:
            measured, reading = first["measured"], first["reading"]
        else:
            measured = "; ".join(_part(r) for r in rows)
            reading = "; ".join(f"{_label(r)}: {r['why']}" for r in undecided)
            if not undecided and len({v for _, v in parts}) == 1:
                reading = f"{parts[0][1]} in every part: " + ", ".join(p for p, _ in parts)
            elif not reading:  # parts that differ, none undecidable: the ones short of holding
                reading = "; ".join(
                    f"{_label(r)}: {r['reading']}" for r in rows if r["verdict"] != Verdict.HOLDS
                )
        decidable, why = _decidable(rows, parts)
        out.append(
            row(
                id=claim,
                statement=STATEMENTS.get(claim, first["statement"]),
                kind=Kind(first["kind"]),
                registered=first["registered"],
                how=first["how"],
                measured=measured,
                value=first["value"] if len(rows) == 1 else math.nan,
                paper=PAPER.get(claim)
                or (first["paper"] if isinstance(first["paper"], str) else None)
                or NOT_THE_PAPERS.get(Kind(first["kind"]), "—"),
                verdict=combine(v for _, v in parts),
                decidable=decidable,
                why=why,
                reading=reading,
                section="smoothness",
                table="smoothness_claims",
                column="verdict",
                parts=parts,
            )
        )
    return out
