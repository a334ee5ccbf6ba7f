"""The claims table: one schema for every claim an experiment decides, and one verdict vocabulary.

Issue 34's contract, first used by Experiment S: an experiment's assembly writes its claims as a
table with the columns :data:`COLUMNS`, and nothing downstream parses prose. A verdict is a value
of :class:`Verdict`; :func:`combine` is the one "a compound claim fails if a part fails" rule;
:func:`gate` turns a decided verdict on runs that did not converge into NOT_CONVERGED.
"""

from __future__ import annotations

import enum
import math


class Verdict(enum.StrEnum):
    HOLDS = "holds"
    FAILS = "fails"
    UNRESOLVED = "unresolved"
    NOT_CONVERGED = "unresolved: not converged"


class Decidable(enum.StrEnum):
    """Whether this run's design can decide a claim (the ``decidable`` column; ``why`` says why
    not). ``yes`` with an unresolved verdict: the design decides, the data did not (a run that did
    not converge, seeds that do not resolve the difference)."""

    YES = "yes"  # the default: a row that states no reason is decidable by design
    NO = "no"  # this run's design cannot decide it at all
    IN_PART = "in part"  # a compound claim: some parts decided, the others not (``why``: which)


class Kind(enum.StrEnum):
    PAPER = "the paper's claim"
    PREDICTION = "our pre-registered prediction"
    POST_HOC = "post hoc"


class How(enum.StrEnum):
    EXACT = "exact computation"
    PAPER_PROTOCOL = "the paper's stated protocol"
    OURS = "our protocol"
    MATCHED = "a choice made to match the paper"


#: the claims table's columns, in order
COLUMNS = (
    "id",
    "claim",  # the compound claim a row is a part of (its own id for a claim of one row)
    "part",  # the part's label within that claim ("β=1.5"; empty for a claim of one row)
    "statement",
    "kind",
    "registered",
    "how",
    "measured",
    "value",
    "lo",
    "hi",
    "paper",
    "verdict",
    "decidable",
    "why",
    "reading",
    "source",
    "keys",
)

#: CSS class of each verdict (the one map)
CSS = {Verdict.HOLDS: "match", Verdict.FAILS: "differs"}


def css(verdict: Verdict | str) -> str:
    return CSS.get(Verdict(verdict), "order")


def decided(verdict: Verdict | str) -> bool:
    return Verdict(verdict) in (Verdict.HOLDS, Verdict.FAILS)


def combine(verdicts) -> Verdict:
    """A claim made of parts: fails if any part fails, holds if every part holds, else the first
    undecided part's verdict (not converged before unresolved)."""
    vs = [Verdict(v) for v in verdicts]
    if not vs:
        return Verdict.UNRESOLVED
    if Verdict.FAILS in vs:
        return Verdict.FAILS
    if all(v == Verdict.HOLDS for v in vs):
        return Verdict.HOLDS
    return Verdict.NOT_CONVERGED if Verdict.NOT_CONVERGED in vs else Verdict.UNRESOLVED


def gate(verdict: Verdict | str, converged: bool) -> Verdict:
    v = Verdict(verdict)
    return Verdict.NOT_CONVERGED if decided(v) and not converged else v


def within(value: float, target: float, rel: float) -> Verdict:
    """holds when |value − target| ≤ rel·|target|, fails otherwise, unresolved on NaN."""
    if not (math.isfinite(value) and math.isfinite(target)):
        return Verdict.UNRESOLVED
    return Verdict.HOLDS if abs(value - target) <= rel * abs(target) else Verdict.FAILS


def in_part_only(verdict: Verdict | str, decidable: Decidable | str) -> bool:
    """An unresolved compound claim that this run decides in some parts only."""
    return Verdict(verdict) == Verdict.UNRESOLVED and decidable == Decidable.IN_PART


def by_design(verdict: Verdict | str, decidable: Decidable | str) -> bool:
    """An unresolved claim this run cannot decide at all; a claim decided in part is not."""
    return Verdict(verdict) == Verdict.UNRESOLVED and decidable == Decidable.NO


def row(**fields) -> dict:
    """One claims row; every column present (missing ones empty), the verdict validated."""
    out = {c: fields.pop(c, "") for c in COLUMNS}
    if fields:
        raise KeyError(f"not claims columns: {sorted(fields)}")
    out["verdict"] = str(Verdict(out["verdict"]))
    out["claim"] = out["claim"] or out["id"]
    out["decidable"] = str(Decidable(out["decidable"] or Decidable.YES))
    if out["decidable"] in (Decidable.NO, Decidable.IN_PART) and not out["why"]:
        raise ValueError(f"claim {out['id']!r}: decidable {out['decidable']!r} needs its why")
    return out
