"""Experiment S's post-hoc relations (added after the numbers, labelled so in the claims table):
the line γ̂(β) and the surface D(β, ε) each world is read against, fitted on the other worlds
(:func:`crl_approx.analyses.smoothness.with_relation` and ``loo_dims`` compute the predictions)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics import claims
from ..numerics.claims import Decidable, How, Kind, Verdict
from .smoothness_claims import S2_BAND, S3_BAND, SPECTRUM_KEYS


def relation(worlds: pd.DataFrame) -> dict:
    """Post hoc (added after the numbers): the line γ̂ = c₀ + c₁β fitted over the worlds, its slope
    against S2's 2, and the worst leave-one-out miss (how far a world falls from the line through
    the others): the relation a new β is read against."""
    w = worlds[np.isfinite(worlds["gamma"]) & (worlds["beta"] < 2)]
    slope = float(worlds["relation_slope"].iloc[0])
    icpt = float(worlds["relation_intercept"].iloc[0])
    miss = (w["gamma"] - w["gamma_loo"]).abs() / w["gamma"]
    ok = math.isfinite(slope) and np.isfinite(miss).any()
    worst = float(miss.max()) if ok else math.nan
    v = claims.within(slope, 2.0, S2_BAND) if ok else Verdict.UNRESOLVED
    return claims.row(
        id="S2 relation",
        statement="γ̂(β) is a line of slope 2 (within 10 %), each world on the others' line",
        kind=Kind.POST_HOC,
        how=How.EXACT,
        measured=f"γ̂ = {icpt:.2f} + {slope:.2f}·β" if ok else "fewer than 3 fitted worlds",
        value=slope,
        verdict=claims.combine([v, Verdict.HOLDS if worst <= S2_BAND else Verdict.FAILS])
        if ok
        else Verdict.UNRESOLVED,
        decidable="" if ok else Decidable.NO,
        why="" if ok else "fewer than 3 worlds with a fitted γ̂",
        reading=f"worst leave-one-out miss {worst:.1%} of γ̂" if ok else "",
        source="smoothness_worlds: relation_slope, gamma_loo",
        keys=SPECTRUM_KEYS,
    )


def relation_dims(eps: pd.DataFrame) -> dict:
    """Post hoc: each world's converged D(ε) against its leave-one-out prediction from the other
    worlds (``D_loo``, a log-bilinear surface in β and log 1/ε), within S3's 20 %: where a world
    of a β not listed should fall. Judged on the worlds inside the others' range of β (an
    interpolation, the use the surface is for); the misses of the end worlds (extrapolations)
    are printed and not judged."""
    statement = "a world's D(ε) between two others on their surface, within 20 %"
    d = eps[np.isfinite(eps["D_loo"])]
    miss = (d["D_interp"] / d["D_loo"] - 1.0).abs()
    per = {float(x): float(m) for x, m in miss.groupby(d["beta"]).max().items()}
    ends = (min(per), max(per)) if per else ()
    inner = {b: m for b, m in per.items() if b not in ends}
    text = ", ".join(
        f"β = {b:g}: {m:.0%}" + ("" if b in inner else " (extrapolated)") for b, m in per.items()
    )
    if not inner:
        return claims.row(
            id="S1 relation",
            statement=statement,
            kind=Kind.POST_HOC,
            how=How.EXACT,
            measured=text or "fewer than 3 worlds with converged D(ε)",
            verdict=Verdict.UNRESOLVED,
            decidable=Decidable.NO,
            why="no world between two others whose converged D(ε) determine the surface",
            reading="no interpolated world: the others' fit is rank-deficient or none lies between",
            source="smoothness_eps: D_interp, D_loo",
            keys=SPECTRUM_KEYS + ", smoothness.eps",
        )
    worst = max(inner.values())
    return claims.row(
        id="S1 relation",
        statement=statement,
        kind=Kind.POST_HOC,
        how=How.EXACT,
        measured=text,
        value=worst,
        verdict=Verdict.HOLDS if worst <= S3_BAND else Verdict.FAILS,
        reading=f"interpolated worst miss {worst:.0%}; extrapolation misses not judged",
        source="smoothness_eps: D_interp, D_loo",
        keys=SPECTRUM_KEYS + ", smoothness.eps",
    )
