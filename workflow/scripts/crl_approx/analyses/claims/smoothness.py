"""Experiment S's claims (docs/smoothness.md): its assembly writes them as a claims table, one row
per world; here each claim is one row and its worlds are its parts."""

from __future__ import annotations

import math

from ...numerics.claims import Kind, Verdict, combine
from .base import g3, row


def _claim(row_id: str) -> str:
    """The claim a row of smoothness_claims belongs to: its id's first word ("S2 β=1" → "S2"),
    a relation (post hoc) its own claim."""
    return row_id if row_id.endswith("relation") else row_id.split()[0]


#: the statement of a claim made of one row per world (each row states its world's case)
STATEMENTS = {
    "S2": "λ_i ∝ i^(−γ), γ ≈ 2β + 2 (±10 %), rising with β; rank 3 at β = 2",
    "S3a": "D(ε) grows no faster than Table 2's ε^(−1/(2β))",
    "S3b": "D(ε) grows like ε^(−α), α within 20 % of 1/(2β + 1)",
    "S4": "trained excess: no plateau before the largest D (roughest), one by D = 4 (Gaussian)",
}


def _part(r) -> str:
    """A world's measurement: its own words where short (\"rank 3\"), else its value."""
    label = r["id"].removeprefix(_claim(r["id"])).strip() or r["id"]
    value, measured = r["value"], str(r["measured"])
    short = len(measured.split()) <= 3 or not (isinstance(value, float) and math.isfinite(value))
    return f"{label}: {measured if short else g3(value)}"


def claims(t, config) -> list[dict]:
    table = t["smoothness_claims"]
    out = []
    for claim, rows in table.groupby(table["id"].map(_claim), sort=False):
        rows = rows.to_dict("records")
        first = rows[0]
        parts = [
            (r["id"].removeprefix(claim).strip() or claim, Verdict(r["verdict"])) for r in rows
        ]
        undecided = [r for r in rows if isinstance(r["decidable"], str) and r["decidable"] != "yes"]
        if len(rows) == 1:
            measured, reading = first["measured"], first["reading"]
        else:
            measured = "; ".join(_part(r) for r in rows)
            reading = "; ".join(
                f"{r['id'].removeprefix(claim).strip()} {r['decidable']}" for r in undecided
            )
        out.append(
            row(
                id=claim,
                statement=STATEMENTS.get(claim, first["statement"]),
                kind=Kind(first["kind"]),
                registered=first["registered"],
                how=first["how"],
                measured=measured,
                value=first["value"] if len(rows) == 1 else math.nan,
                paper=first["paper"] if isinstance(first["paper"], str) else "— (our prediction)",
                verdict=combine(v for _, v in parts),
                decidable="yes" if not undecided else undecided[0]["decidable"],
                reading=reading,
                section="smoothness",
                table="smoothness_claims",
                column="verdict",
                parts=parts,
            )
        )
    return out
