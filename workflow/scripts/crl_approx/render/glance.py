"""The summary, read from the claims table (results/tables/claims.csv): the paper's claims, our
pre-registered predictions and what we found after the numbers (post hoc, counted apart), one row
per claim, and a counts line that keeps what was decided apart from what this run cannot decide.
The HTML report's summary and README's at-a-glance block both print :func:`glance`; nothing here
computes a verdict."""

from __future__ import annotations

import pandas as pd

from ..numerics.claims import Kind, Verdict, by_design, css, in_part_only

#: the tables, by the claims' kind (a post-hoc finding is never counted as a prediction)
TABLES = (
    ("the paper's claims", (Kind.PAPER,)),
    ("our pre-registered predictions", (Kind.PREDICTION,)),
    ("found after the numbers (post hoc)", (Kind.POST_HOC,)),
)
#: how a number was obtained, in a word or two (the claims' How values)
HOW = {
    "exact computation": "exact",
    "the paper's stated protocol": "the paper's protocol",
    "our protocol": "ours",
    "a choice made to match the paper": "chosen to match the paper",
}
SHOWN = {Verdict.NOT_CONVERGED: "not converged"}


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _row(r: dict) -> dict:
    verdict = Verdict(r["verdict"])
    counts = _text(r["part_counts"])
    # undecidable by design: unresolved, and this run cannot decide it at all (a run that did not
    # converge is counted as that, whatever its row says; a claim decided in part is not)
    decidable = _text(r["decidable"])
    design = by_design(verdict, decidable)
    return {
        "id": r["id"],
        "claim": _text(r["statement"]),
        "how": HOW[r["how"]],
        "ours": _text(r["measured"]),
        "paper": _text(r["paper"]),
        "verdict": SHOWN.get(verdict, str(verdict)) + (f" ({counts})" if counts else ""),
        "css": css(verdict),
        "reading": f"no: {_text(r['why'])}" if design else _text(r["reading"]),
        "link": _text(r["section"]),
        "docs": _text(r.get("docs")),
        "parts": _text(r["parts"]),
        "source": f"source: results/tables/claims.csv; column: measured; row: id={r['id']}; "
        f"from: {r['source']}; config: {_text(r['keys'])}",
        "paper_source": f"source: results/tables/claims.csv; column: paper; row: id={r['id']}",
        "verdict_enum": verdict,
        "by_design": design,
        "in_part": in_part_only(verdict, decidable),
    }


def counts(rows: list[dict]) -> str:
    """Decided (holds, fails) apart from not decided here (not converged, unresolved by the
    seeds or the rule, decided in some parts only, undecidable by this run's design)."""
    v = [r["verdict_enum"] for r in rows]
    design = sum(r["by_design"] for r in rows)
    part = sum(r["in_part"] for r in rows)
    unresolved = v.count(Verdict.UNRESOLVED) - design - part
    return (
        f"decided: {v.count(Verdict.HOLDS)} hold, {v.count(Verdict.FAILS)} fail; not decided "
        f"here: {v.count(Verdict.NOT_CONVERGED)} not converged, {unresolved} unresolved by the "
        f"seeds or the rule, {part} decided in part, {design} undecidable by this run's design"
    )


def glance(claims: pd.DataFrame) -> dict:
    """{"tables": [{"name", "rows", "counts"}], "counts": the whole summary's counts line}."""
    rows = [_row(r) for r in claims.to_dict("records")]
    tables = []
    for name, kinds in TABLES:
        mine = [r for r, c in zip(rows, claims["kind"], strict=True) if Kind(c) in kinds]
        if mine:
            tables.append({"name": name, "rows": mine, "counts": counts(mine)})
    return {"tables": tables, "rows": rows, "counts": counts(rows)}
