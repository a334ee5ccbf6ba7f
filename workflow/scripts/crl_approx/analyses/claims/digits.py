"""Experiment R's predictions (docs/experiment_r.md): on the digits with K classes, saturation at
D ∈ {K − 1, K} with effective rank ≤ K; on the image halves, no saturation at D ≤ 10."""

from __future__ import annotations

from ...numerics.claims import How, Kind, combine
from .base import SHORT, as_verdict, g3, row

REGISTERED = "before the sweep (docs/experiment_r.md)"


def claims(t, config) -> list[dict]:
    v = t["digits_verdicts"].set_index("pairing")
    e = t["digits_elbow"]
    excess = e[e["curve"] == "heldout_excess"].set_index("pairing")
    classes = [p for p in v.index if p in excess.index]
    parts = [
        (f"K = {int(v.loc[p, 'K'])}", as_verdict(v.loc[p, "verdict_elbow_rule"])) for p in classes
    ]
    alone = [(p, as_verdict(v.loc[p, "verdict_excess"])) for p in classes]
    ks = ", ".join(str(int(v.loc[p, "K"])) for p in classes)
    out = [
        row(
            id="R classes",
            statement=f"digits, K = {ks}: saturation at D ∈ {{K − 1, K}}, effective rank ≤ K",
            kind=Kind.PREDICTION,
            registered=REGISTERED,
            how=How.OURS,
            measured="excess saturates at D "
            + ", ".join(str(excess.loc[p, "saturation"]) for p in classes)
            + f" (K = {ks})",
            paper="— (our prediction)",
            verdict=combine(x for _, x in parts),
            reading="excess alone: "
            + ", ".join(SHORT[x] for _, x in alone)
            + "; entropy rank exceeds K: "
            + ", ".join(g3(v.loc[p, "max_effective_rank_above_K"]) for p in classes),
            section="digits",
            table="digits_verdicts",
            column="verdict_elbow_rule, verdict_excess, max_effective_rank_above_K",
            parts=parts,
        )
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
