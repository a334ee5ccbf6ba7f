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


def _saturations(e, classes, curve: str) -> str:
    """The saturation rule's label per K of one curve ("unresolved (8–9)", "≥ 20", "4")."""
    at = e[e["curve"] == curve].set_index("pairing")["saturation"]
    return ", ".join(str(at.get(p, "—")) for p in classes)


def claims(t, config) -> list[dict]:
    v = t["digits_verdicts"].set_index("pairing")
    e = t["digits_elbow"]
    excess = e[e["curve"] == "heldout_excess"].set_index("pairing")
    classes = [p for p in v.index if p in excess.index]
    converged = {p: v.loc[p, "converged"] in (True, "True") for p in classes}
    ks = ", ".join(str(int(v.loc[p, "K"])) for p in classes)
    label = {p: f"K = {int(v.loc[p, 'K'])}" for p in classes}
    elbows = [(label[p], gate(_elbow_rule(e, p), converged[p])) for p in classes]
    # the verdict: the saturation rule's (dated 2026-12-01, after the numbers: it says where the
    # seeds cannot tell; digits_verdicts' ``verdict``, gated); the registered elbow rule beside it
    saturated = [(label[p], as_verdict(v.loc[p, "verdict"])) for p in classes]
    rank = v["max_effective_rank_above_K"]
    ranks = [
        (label[p], gate(within_bound(rank[p], int(v.loc[p, "K"])), converged[p])) for p in classes
    ]
    out = [
        row(
            id="R classes",
            statement=f"digits, K = {ks}: the excess and the effective rank saturate at D ∈ "
            "{K − 1, K}",
            kind=Kind.PREDICTION,
            registered=REGISTERED,
            how=How.OURS,
            measured=f"saturation D, excess: {_saturations(e, classes, 'heldout_excess')}; "
            f"rank: {_saturations(e, classes, 'effective_rank')}",
            paper="— (our prediction)",
            verdict=combine(x for _, x in saturated),
            reading="elbow rule (registered): "
            + ", ".join(SHORT[x] for _, x in elbows)
            + "; excess alone: "
            + ", ".join(SHORT[as_verdict(v.loc[p, "verdict_excess"])] for p in classes),
            section="digits",
            table="digits_verdicts",
            column="verdict, verdict_elbow_rule, verdict_excess",
            parts=saturated,
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
        # prediction 3 by the saturation rule on the MI bound, the registered elbow rule (the
        # held-out InfoNCE's elbow above D = 10) beside it, as for prediction 1
        mi = e[(e["pairing"] == p) & (e["curve"] == "mi_bound")]
        label = mi["saturation"].iloc[0] if len(mi) else "—"
        at = e[(e["pairing"] == p) & (e["curve"] == "heldout_infonce")]["elbow_D"]
        elbow = "none" if not len(at) or not math.isfinite(at.iloc[0]) else int(at.iloc[0])
        registered = gate(as_verdict(v.loc[p, "verdict_elbow_rule"]), converged_at(v, p))
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
                reading=f"elbow rule (registered): {SHORT[registered]}, elbow at D = {elbow}",
                section="digits",
                table="digits_verdicts",
                column="verdict_elbow_rule, verdict",
            )
        )
    return out


def converged_at(v, pairing: str) -> bool:
    return v.loc[pairing, "converged"] in (True, "True")
