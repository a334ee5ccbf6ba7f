"""The paper's own claims: Table 1's exact and trained cells, the truncation relation, the LCGM's
probes and saturation at D = K, the noise exponent μ̂."""

from __future__ import annotations

import math

from ...numerics import saturation, tiers
from ...numerics.claims import Decidable, How, Kind, Verdict, combine, gate
from .base import from_tier, row, times

EXACT_COLUMNS = {"spectral_tail": "tail", "truncation_excess_risk": "truncation excess"}
MLP_COLUMNS = {"mlp_l2_distance": "L2", "mlp_excess_risk": "excess"}
#: the objective whose protocol the paper states (AdamW on sampled pairs)
STATED = "samples"
#: why a claim has no paper value to meet (paper_values.yaml's settings differ from the run's)
NOT_PAPERS = "this run is not the paper's setting (no paper value)"


def exact(t, config) -> list[dict]:
    t1 = t["table1"]
    cells = t1[t1["objective"] == t1["objective"].iloc[0]]  # no training: every objective's
    parts, off = [], []
    for r in cells.itertuples():
        for col, name in EXACT_COLUMNS.items():
            tier = tiers.scale_tier(getattr(r, col), getattr(r, f"paper_{col}"))
            parts.append((f"D = {r.D} {name}", from_tier(tier)))
            if tier != tiers.MATCH:
                off.append(f"D = {r.D} {name} {getattr(r, f'ratio_{col}'):.4g}×")
    n_match = len(parts) - len(off)
    unset = cells[[f"paper_{c}" for c in EXACT_COLUMNS]].isna().all(axis=None)
    return [
        row(
            id="T1 exact",
            statement="Table 1: spectral tail and truncation excess at D = "
            + ", ".join(str(d) for d in cells["D"]),
            kind=Kind.PAPER,
            how=How.EXACT,
            measured=f"{n_match} of {len(parts)} cells equal at every printed digit",
            value=n_match,
            paper="Table 1's printed values",
            verdict=combine(v for _, v in parts),
            reading=NOT_PAPERS
            if unset
            else "quadrature reproduces every printed digit"
            if not off
            else "differs: " + "; ".join(off[:3]),
            decidable=Decidable.NO if unset else "",
            why=NOT_PAPERS if unset else "",
            section="table1",
            table="table1",
            column="spectral_tail, truncation_excess_risk",
            parts=parts,
        )
    ]


def relation(t, config) -> list[dict]:
    s = t["spectrum"]
    worst = float((s["truncation_excess_risk"] / s["spectral_tail"]).max())
    bound = float(config["tau"]) / 2
    return [
        row(
            id="T1 relation",
            statement="the truncation's excess is at most a constant times the spectral tail",
            kind=Kind.PAPER,
            how=How.EXACT,
            measured=f"largest excess / tail {worst:.3f} over D",
            value=worst,
            paper=f"excess ≲ tail (the bound τ/2 = {bound:g} is ours)",
            verdict=Verdict.HOLDS if worst <= bound else Verdict.FAILS,
            reading=f"below τ/2 at every D, {worst / bound:.0%} of it at most",
            section="table1",
            table="spectrum",
            column="truncation_excess_risk / spectral_tail",
        )
    ]


def _converged(t, objective: str, dim: int) -> bool:
    """Whether the trained Table 1 cell converged, read from the dynamics table of the same runs:
    both its loss measure (``converged``) and, where measured, its 2x budget check (the
    alignment statistic at 2B within tolerance of B's) must say so; True where not measured.
    Stricter than the dynamics' own verdicts, where the budget check, where measured, decides
    in place of the loss measure."""
    d = t["dynamics"]
    r = d[(d["objective"] == objective) & (d["D"] == dim)]
    if not len(r):
        return True
    r = r.iloc[0]
    return (
        bool(r["converged"]) and r["budget_agrees"] is not False and r["budget_agrees"] != "False"
    )


def _budget_ratio(t, dim: int) -> tuple[float, float]:
    """The sampled protocol's largest budget in the sample-size study at D (fresh pairs, the
    default learning rate): (multiplier, excess / the paper's)."""
    s = t["sample_size"]
    s = s[(s["protocol"] == "fresh") & s["is_default_lr"] & (s["D"] == dim)]
    if not len(s):
        return math.nan, math.nan
    top = s.loc[s["budget_multiplier"].idxmax()]
    return float(top["budget_multiplier"]), float(top["ratio_to_paper"])


def trained(t, config) -> list[dict]:
    t1 = t["table1"]
    default = config["train"]["default_objective"]
    out = []
    for objective, cells in t1.groupby("objective", sort=False):
        parts, notes, n_reach = [], [], 0
        for r in cells.itertuples():
            converged = _converged(t, objective, r.D)
            for col, name in MLP_COLUMNS.items():
                mean, sd = getattr(r, f"{col}_mean"), getattr(r, f"{col}_sd")
                tier = tiers.scale_tier(mean, getattr(r, f"paper_{col}"), sd, n=r.n_seeds)
                # a cell on runs that did not converge is that, whatever its tier (more training
                # could move a miss, a hit or an interval that cannot tell)
                v = from_tier(tier) if converged else Verdict.NOT_CONVERGED
                parts.append((f"D = {r.D} {name}", v))
                n_reach += converged and tiers.reaches(tier)  # after the convergence gate
                if v != Verdict.HOLDS:
                    notes.append((r.D, name, getattr(r, f"ratio_{col}"), v))
        unset = cells["paper_mlp_excess_risk"].isna().all()
        how = How.PAPER_PROTOCOL if objective == STATED else How.OURS
        if objective == default and objective != STATED:
            how = How.MATCHED  # the default objective: the one that comes closest to the paper
        out.append(
            row(
                id=f"T1 MLP {objective}",
                statement=f"Table 1: trained MLPs' L2 distance and excess, {objective} objective",
                kind=Kind.PAPER,
                how=how,
                measured=_reached(n_reach, parts),
                value=n_reach,
                paper="Table 1's MLP columns",
                verdict=combine(v for _, v in parts),
                reading=NOT_PAPERS if unset else _trained_reading(t, objective, notes),
                decidable=Decidable.NO if unset else "",
                why=NOT_PAPERS if unset else "",
                section="table1",
                table="table1",
                column="mlp_l2_distance_mean, mlp_excess_risk_mean",
                parts=parts,
            )
        )
    return out


def _reached(n_reach: int, parts) -> str:
    """ "6 of 7 converged cells within 10 % of the paper's; 1 not converged": a cell that did not
    converge is counted apart, whatever its distance to the paper's value."""
    stuck = sum(v == Verdict.NOT_CONVERGED for _, v in parts)
    said = f"{n_reach} of {len(parts) - stuck} converged cells within 10 % of the paper's"
    return said + (f"; {stuck} not converged" if stuck else "")


#: why a trained cell does not hold, in the reading
WHY = {
    Verdict.NOT_CONVERGED: "not converged",
    Verdict.UNRESOLVED: "seeds cannot tell",
    Verdict.FAILS: "converged miss",
}


def _trained_reading(t, objective: str, notes) -> str:
    """The cells that do not hold, by reason: "D = 2, 4, 8 not converged (excess 1.2×, …)"; for
    the stated protocol also the sample-size study's largest budget at those D."""
    if not notes:
        return "every cell within 10 % of the paper's"
    said = []
    for v, why in WHY.items():
        mine = [n for n in notes if n[3] == v]
        if not mine:
            continue
        name = "excess" if any(n[1] == "excess" for n in mine) else mine[0][1]
        mine = [n for n in mine if n[1] == name]
        dims = ", ".join(str(n[0]) for n in mine)
        said.append(f"D = {dims} {why} ({name} {', '.join(times(n[2]) for n in mine)})")
    if objective == STATED:
        dims = sorted({n[0] for n in notes if n[1] == "excess"})
        budget = [_budget_ratio(t, d) for d in dims]
        shown = [
            (d, m, r) for d, (m, r) in zip(dims, budget, strict=True) if math.isfinite(r) and m > 1
        ]
        if shown:
            said.append(
                f"{shown[0][1]:g}×, fresh pairs: "
                + ", ".join(times(r) for _, _, r in shown)
                + " (D = "
                + ", ".join(str(d) for d, _, _ in shown)
                + ")"
            )
    return "; ".join(said)


def lcgm(t, config) -> list[dict]:
    probes = t["lcgm_probes"]
    k = int(config["lcgm"]["K"])
    r = probes[probes["D"] == k].iloc[0]
    parts, said = [], []
    for side in ("f", "g"):
        ours, theirs = r[f"probe_r2_{side}_mean"], r[f"paper_probe_r2_{side}"]
        decimals = len(f"{theirs:g}".split(".")[-1]) if math.isfinite(theirs) else 2
        parts.append((side, from_tier(tiers.bounded_tier(ours, theirs, decimals))))
        said.append(f"{side} {ours:.4f}")
    elbow = t["lcgm_elbow"].set_index("curve").loc["alignment_quality"]
    saturated = gate(Verdict(elbow["saturation_verdict"]), bool(elbow["converged"]))
    return [
        row(
            id="LCGM probes",
            statement=f"LCGM: linear-probe R² at D = K = {k}",
            kind=Kind.PAPER,
            how=How.MATCHED,  # the LCGM design was chosen to give probe R² near the paper's
            measured=", ".join(said),
            value=r["probe_r2_f_mean"],
            paper="—"
            if math.isnan(r["paper_probe_r2_f"])
            else f"f {r['paper_probe_r2_f']:g}, g {r['paper_probe_r2_g']:g}",
            verdict=combine(v for _, v in parts),
            reading=NOT_PAPERS
            if math.isnan(r["paper_probe_r2_f"])
            else "the design was chosen to give R² near the paper's",
            decidable=Decidable.NO if math.isnan(r["paper_probe_r2_f"]) else "",
            why=NOT_PAPERS if math.isnan(r["paper_probe_r2_f"]) else "",
            section="lcgm",
            table="lcgm_probes",
            column="probe_r2_f_mean, probe_r2_g_mean",
            parts=parts,
        ),
        row(
            id="LCGM saturation",
            statement="LCGM: the alignment quality saturates at D = K",
            kind=Kind.PAPER,
            how=How.OURS,
            measured=f"saturates at D = {elbow['saturation']} (per-seed rule)"
            if elbow["saturation_status"] == saturation.SATURATED
            else f"saturation: {elbow['saturation']} (per-seed rule)",
            paper=f"D = K = {k}",
            verdict=saturated,
            reading=f"the probes' R² plateau at D = {elbow['saturation']}"
            if elbow["saturation_status"] == saturation.SATURATED
            else "the seeds do not place the plateau",
            section="lcgm",
            table="lcgm_elbow",
            column="saturation, saturation_verdict",
        ),
    ]


def noise(t, config) -> list[dict]:
    n = t["noise_exponent"]
    g = n[(n["dataset"] == "gmm") & (n["seed"] == -1)]
    if not len(g):
        return []
    g = g.iloc[0]
    level = float(g["ci_level"])
    tier = tiers.interval_tier(g["paper_mu_hat"], g["mu_ci_lo"], g["mu_ci_hi"], level)
    lo, hi = g["mu_ci_lo"], g["mu_ci_hi"]
    return [
        row(
            id="noise μ̂",
            statement="the mixture's density-ratio noise exponent μ̂",
            kind=Kind.PAPER,
            how=How.MATCHED,  # the fit window is the one that reproduces the paper's μ̂
            measured=f"{g['mu_hat']:.4f} [{lo:.4f}, {hi:.4f}]",
            value=g["mu_hat"],
            lo=lo,
            hi=hi,
            paper=f"{g['paper_mu_hat']:g}",
            verdict=from_tier(tier),
            reading=f"the paper's value inside our {level:.0%} interval; the window was chosen "
            "to reproduce it"
            if from_tier(tier) == Verdict.HOLDS
            else tier,
            section="noise",
            table="noise_exponent",
            column="mu_hat, mu_ci_lo, mu_ci_hi",
        )
    ]


#: the paper's claims, in the summary's order
BUILDERS = (exact, relation, trained, lcgm, noise)


def claims(t, config) -> list[dict]:
    return [r for build in BUILDERS for r in build(t, config)]
