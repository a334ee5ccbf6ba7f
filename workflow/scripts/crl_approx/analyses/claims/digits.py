"""Experiment R's predictions (docs/experiment_r.md), one row each: 1, on the digits with K
classes the held-out excess and the effective rank saturate at D ∈ {K − 1, K} (the registered
elbow rule; the saturation rule, added after the numbers, beside it); 2, the effective rank stays
≤ K at every D > K; 3, on the image halves, no saturation at D ≤ 10."""

from __future__ import annotations

import math

from ...numerics.claims import How, Kind, Verdict, combine, gate
from .base import SHORT, as_verdict, g3, row


def within_bound(value, bound: float) -> Verdict:
    """holds when ``value`` ≤ ``bound``, fails above it, unresolved where not measured."""
    if not math.isfinite(float(value)):
        return Verdict.UNRESOLVED
    return Verdict.HOLDS if float(value) <= bound else Verdict.FAILS


REGISTERED = "before the sweep (docs/experiment_r.md)"


def _elbow_rule(e, pairing: str) -> Verdict:
    """Prediction 1 under the registered elbow rule at one K: the held-out excess's and the
    entropy effective rank's elbows both in {K − 1, K} (digits_elbow's ``holds``)."""
    held = e[(e["pairing"] == pairing) & e["curve"].isin(CURVES)].set_index("curve")["holds"]
    if set(held.index) != set(CURVES):
        return Verdict.UNRESOLVED
    return Verdict.HOLDS if all(h in (True, "True") for h in held) else Verdict.FAILS


#: prediction 1's two curves, as digits_elbow names them
CURVES = ("heldout_excess", "effective_rank")


def _elbows(e, classes, curve: str) -> str:
    at = e[e["curve"] == curve].set_index("pairing")["elbow_D"]
    return ", ".join(
        "none" if not math.isfinite(float(at.get(p, math.nan))) else str(int(at[p]))
        for p in classes
    )


def claims(t, config) -> list[dict]:
    v = t["digits_verdicts"].set_index("pairing")
    e = t["digits_elbow"]
    excess = e[e["curve"] == "heldout_excess"].set_index("pairing")
    classes = [p for p in v.index if p in excess.index]
    converged = {p: v.loc[p, "converged"] in (True, "True") for p in classes}
    ks = ", ".join(str(int(v.loc[p, "K"])) for p in classes)
    label = {p: f"K = {int(v.loc[p, 'K'])}" for p in classes}
    elbows = [(label[p], gate(_elbow_rule(e, p), converged[p])) for p in classes]
    rank = v["max_effective_rank_above_K"]
    ranks = [
        (label[p], gate(within_bound(rank[p], int(v.loc[p, "K"])), converged[p])) for p in classes
    ]
    out = [
        row(
            id="R classes",
            statement=f"digits, K = {ks}: excess and effective rank saturate at D ∈ {{K − 1, K}}",
            kind=Kind.PREDICTION,
            registered=REGISTERED,
            how=How.OURS,
            measured=f"elbows, excess: {_elbows(e, classes, 'heldout_excess')}; "
            f"rank: {_elbows(e, classes, 'effective_rank')} (K = {ks})",
            paper="— (our prediction)",
            verdict=combine(x for _, x in elbows),
            reading="saturation rule (post hoc), excess: "
            + ", ".join(SHORT[as_verdict(v.loc[p, "verdict_excess"])] for p in classes)
            + "; the entropy rank rises with D by construction",
            section="digits",
            table="digits_elbow",
            column="elbow_D, holds",
            parts=elbows,
        ),
        row(
            id="R rank",
            statement=f"digits, K = {ks}: the entropy effective rank stays ≤ K at every D > K",
            kind=Kind.PREDICTION,
            registered=REGISTERED,
            how=How.OURS,
            measured="largest: " + ", ".join(g3(rank[p]) for p in classes) + f" (K = {ks})",
            value=max(float(rank[p]) for p in classes),
            paper="— (our prediction)",
            verdict=combine(x for _, x in ranks),
            reading="it counts low-variance directions; the variance rank (post hoc): "
            + ", ".join(g3(v.loc[p, "max_variance_rank_above_K"]) for p in classes),
            section="digits",
            table="digits_verdicts",
            column="max_effective_rank_above_K, max_variance_rank_above_K",
            parts=ranks,
        ),
    ]
    halves = [p for p in v.index if p not in excess.index]
    for p in halves:
        curves = e[(e["pairing"] == p) & (e["curve"] == "mi_bound")]
        label = curves["saturation"].iloc[0] if len(curves) else "—"
        out.append(
            row(
                id=f"R {p}",
                statement="image halves: no saturation at D ≤ 10",
                kind=Kind.PREDICTION,
                registered=REGISTERED,
                how=How.OURS,
                measured=f"MI bound saturation: {label}",
                paper="— (our prediction)",
                verdict=as_verdict(v.loc[p, "verdict"]),
                reading="the seeds cannot place the MI bound's plateau",
                section="digits",
                table="digits_verdicts",
                column="verdict",
            )
        )
    return out
