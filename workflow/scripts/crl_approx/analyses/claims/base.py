"""What every experiment's claim builder shares: the run's tables by name, a tier as a verdict, a
compound claim's parts, short numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...numerics import claims, tiers
from ...numerics.claims import Verdict

#: the claims table's columns beyond :data:`crl_approx.numerics.claims.COLUMNS`: the report
#: section a row's details are in, a compound claim's parts ("label: verdict; …") and how many
#: give each verdict, the table its numbers come from (its provenance keys are that table's)
EXTRA = ("section", "parts", "part_counts", "table")


class Tables:
    """A run's tables by name, read on first use: ``t["table1"]`` is results/tables/table1.csv
    (or the path given for the name)."""

    def __init__(self, results: Path, paths: dict | None = None):
        self.results = Path(results)
        self.paths = {k: Path(v) for k, v in (paths or {}).items()}
        self._read = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._read:
            path = self.paths.get(name, self.results / "tables" / f"{name}.csv")
            self._read[name] = pd.read_csv(path)
        return self._read[name]


def from_tier(tier: str) -> Verdict:
    """A tier against the paper (:mod:`crl_approx.numerics.tiers`) as a verdict: reaching
    holds, a miss fails, anything else (seeds or interval cannot tell, no paper value) is
    unresolved."""
    if tiers.reaches(tier):
        return Verdict.HOLDS
    if tiers.misses(tier):
        return Verdict.FAILS
    return Verdict.UNRESOLVED


#: the words of a verdict inside a compound claim's parts
SHORT = {
    Verdict.HOLDS: "holds",
    Verdict.FAILS: "fails",
    Verdict.UNRESOLVED: "unresolved",
    Verdict.NOT_CONVERGED: "not converged",
}


def parts_text(parts: list[tuple[str, Verdict]]) -> str:
    """A compound claim's parts, "label: verdict; …", or "" when every part agrees."""
    if len({v for _, v in parts}) <= 1:
        return ""
    return "; ".join(f"{label}: {SHORT[Verdict(v)]}" for label, v in parts)


def parts_count(parts: list[tuple[str, Verdict]]) -> str:
    """How many parts give each verdict, "2 holds, 1 fails", or "" when every part agrees."""
    verdicts = [Verdict(v) for _, v in parts]
    if len(set(verdicts)) <= 1:
        return ""
    order = [v for v in SHORT if v in verdicts]
    plural = {Verdict.HOLDS: "hold", Verdict.FAILS: "fail"}
    return ", ".join(
        f"{n} {SHORT[v] if n == 1 else plural.get(v, SHORT[v])}"
        for v in order
        for n in [verdicts.count(v)]
    )


def row(*, section: str, table: str, column: str, parts=(), **fields) -> dict:
    """One claims row with its section, parts and source table (``source`` = "table: column")."""
    out = claims.row(source=f"{table}: {column}", **fields)
    parts = list(parts)
    out.update(section=section, parts=parts_text(parts), part_counts=parts_count(parts))
    out["table"] = table
    return out


def g3(x: float) -> str:
    """A number in three significant digits, "—" when missing."""
    return "—" if x is None or not math.isfinite(float(x)) else f"{float(x):.3g}"


def times(x: float) -> str:
    """A ratio to the paper's value, e.g. "8.6×"."""
    return "—" if not math.isfinite(float(x)) else f"{float(x):.3g}×"


def words(text: str) -> int:
    return len(str(text).split())


#: a cell that carries no verdict: "not applicable" (the dynamics' one direction: no order)
ALIASES = {"not applicable": None}


def as_verdict(text) -> Verdict | None:
    """A table's verdict cell as a :class:`Verdict` (None where it carries none)."""
    if isinstance(text, float) and math.isnan(text):
        return None
    return ALIASES[text] if text in ALIASES else Verdict(text)
