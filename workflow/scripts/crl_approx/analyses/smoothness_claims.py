"""Experiment S's pre-registered predictions S1–S4 (docs/smoothness.md, committed before the
configured worlds were computed), judged into rows of the claims table
(:mod:`crl_approx.numerics.claims`) from the tables of :mod:`.smoothness`.

* **S1** (the paper's claim): at every ε of the ladder the truncation's D(ε) does not grow with β
  (ties allowed; a D past ``max_dim`` counts as larger than any), and at the smallest ε the
  roughest world needs more than the smoothest. A violation on an unconverged D is unresolved.
* **S2** (ours): γ̂ within 10 % of 2β + 2 for β < 2 (read on the point γ̂, as registered; its
  range over fits is printed beside it), γ̂ increasing with β, and the β = 2 world of rank 3.
* **S3a** (Table 2's bound): α̂ ≤ 1/(2β); **S3b** (ours): α̂ within 20 % of 1/(2β + 1).
* **S4** (ours): the trained excess against ``dims`` does not saturate before the largest D on
  the roughest trained world, and saturates at D ≤ 4 on the smoothest (the saturation rule),
  gated by convergence.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics import claims, saturation
from ..numerics.claims import Decidable, How, Kind, Verdict

REGISTERED = "2026-12-01"
S2_BAND = 0.10
S3_BAND = 0.20
S4_SMOOTH_BY = 4
SPECTRUM_KEYS = "smoothness.betas, smoothness.mutual_information, smoothness.panels, tau"


def s1(eps: pd.DataFrame, keys: str) -> dict:
    """Only converged D(ε) are compared (a "> max_dim" counts when its excess at max_dim is
    converged): at each ε the converged worlds' integer D must not rise with β; the strict part
    compares the roughest and the smoothest world at the smallest ε where both are converged."""
    betas = sorted(eps["beta"].unique())
    worst, parts, both, compared = "", [], None, []
    for x, g in eps.groupby("eps", sort=False):
        g = g.set_index("beta").loc[betas]
        g = g[g["converged"].astype(bool)]
        d = g["D_needed"].fillna(math.inf).to_numpy()
        if len(d) < 2:
            continue
        compared.append(len(d))
        if any(d[i] > d[i - 1] for i in range(1, len(d))):
            parts.append(Verdict.FAILS)
            worst = worst or f"a smoother world needs a larger D at ε = {x:g}"
        else:
            parts.append(Verdict.HOLDS)
        if betas[0] in g.index and betas[-1] in g.index:
            both = (x, g.loc[betas[0], "D_needed"], g.loc[betas[-1], "D_needed"])
    if both is None or not parts:
        verdict, measured, reading = Verdict.UNRESOLVED, "no ε converged on both ends", ""
        d_r = math.nan
    else:
        x, d_r, d_s = both
        d_r = d_r if math.isfinite(d_r) else math.inf
        parts.append(Verdict.HOLDS if d_r > d_s else Verdict.FAILS)
        verdict = claims.combine(parts)
        show = "> max" if not math.isfinite(d_r) else f"{d_r:g}"
        measured = f"at ε = {x:g}: D {show} (β = {betas[0]:g}) vs {d_s:g} (β = {betas[-1]:g})"
        per = ", ".join(
            f"{n} worlds at {compared.count(n)} level(s)"
            for n in sorted(set(compared), reverse=True)
        )
        reading = worst or f"levels, not rates: no converged D rises with β ({per})"
    return claims.row(
        id="S1",
        statement="the D the rank-D truncation needs for ε does not grow with the PMI's smoothness",
        kind=Kind.PAPER,
        registered=REGISTERED,
        how=How.EXACT,
        measured=measured,
        value=d_r,
        paper="rates depend on smoothness (abstract; Table 2)",
        verdict=verdict,
        reading=reading,
        source="smoothness_eps: D_needed, converged",
        keys=SPECTRUM_KEYS + ", smoothness.eps",
    )


def _gamma_text(w) -> str:
    if not math.isfinite(w["gamma"]):
        return "γ̂ not fitted"
    return f"γ̂ = {w['gamma']:.2f} [{w['gamma_lo']:.2f}, {w['gamma_hi']:.2f}]"


def s2(worlds: pd.DataFrame) -> list[dict]:
    rows = []
    rough = worlds[worlds["beta"] < 2]
    for _, w in worlds.iterrows():
        b = float(w["beta"])
        if b >= 2:
            v = Verdict.HOLDS if int(w["rank"]) == 3 else Verdict.FAILS
            rows.append(
                claims.row(
                    id=f"S2 β={b:g}",
                    claim="S2",
                    part=f"β={b:g}",
                    statement="the Gaussian channel's PMI has rank 3",
                    kind=Kind.PREDICTION,
                    registered=REGISTERED,
                    how=How.EXACT,
                    measured=f"rank {int(w['rank'])}",
                    value=int(w["rank"]),
                    verdict=v,
                    reading=f"rank {int(w['rank'])}; closed form matched to "
                    f"{w['closed_form_max_rel_error']:.0e}",
                    source="smoothness_worlds: rank",
                    keys=SPECTRUM_KEYS,
                )
            )
            continue
        target = 2 * b + 2
        # as registered: the converged point γ̂ against the band (the spread is reported beside)
        v = claims.within(float(w["gamma"]), target, S2_BAND)
        fitted = math.isfinite(w["gamma"])
        rows.append(
            claims.row(
                id=f"S2 β={b:g}",
                claim="S2",
                part=f"β={b:g}",
                statement=f"λ_i ∝ i^(−γ) with γ within 10 % of 2β + 2 = {target:g}",
                kind=Kind.PREDICTION,
                registered=REGISTERED,
                how=How.EXACT,
                measured=_gamma_text(w),
                value=float(w["gamma"]),
                lo=float(w["gamma_lo"]),
                hi=float(w["gamma_hi"]),
                verdict=v,
                decidable="" if fitted else Decidable.NO,
                why="" if fitted else "fewer than 4 converged eigenvalues",
                reading=(
                    f"fitted on the converged i = {int(w['fit_from'])}…{int(w['fit_to'])}"
                    if math.isfinite(w["gamma"])
                    else "fewer than 4 converged eigenvalues past fit_from"
                ),
                source="smoothness_worlds: gamma",
                keys=SPECTRUM_KEYS + ", smoothness.fit_from, smoothness.tolerance",
            )
        )
    g = rough["gamma"].to_numpy()
    if len(g) < 2 or not np.isfinite(g).all():  # one rough world, or one γ̂ not fitted
        mono = Verdict.UNRESOLVED
    else:
        mono = Verdict.HOLDS if np.all(np.diff(g) > 0) else Verdict.FAILS
    rows.append(
        claims.row(
            id="S2 order",
            claim="S2",
            part="order",
            statement="γ̂ increases with β",
            kind=Kind.PREDICTION,
            registered=REGISTERED,
            how=How.EXACT,
            measured=", ".join(f"{x:.2f}" if math.isfinite(x) else "—" for x in g),
            verdict=mono,
            reading="γ̂ by β: "
            + ", ".join(
                f"{b:g}: {x:.2f}" if math.isfinite(x) else f"{b:g}: —"
                for b, x in zip(rough["beta"], g, strict=True)
            ),
            source="smoothness_worlds: gamma",
            keys=SPECTRUM_KEYS,
        )
    )
    return rows


def _alpha_text(a: float, levels: int) -> str:
    return (
        f"α̂ = {a:.3f} ({levels} ε levels)"
        if math.isfinite(a)
        else f"α̂ not fitted ({levels} ε level(s))"
    )


def s3(worlds: pd.DataFrame, eps_min: float) -> list[dict]:
    """S3a and S3b per world, read on the point α̂ (its range printed beside it); ``eps_min``
    the ladder's smallest ε, named in the reading."""
    rows = []
    for _, w in worlds[worlds["beta"] < 2].iterrows():
        b, a = float(w["beta"]), float(w["alpha"])
        ok = math.isfinite(a) and int(w["alpha_levels"]) >= 3
        why = "" if ok else "fewer than 3 converged ε levels at D ≥ alpha_from_dim"
        bound = 1 / (2 * b)
        va = (Verdict.HOLDS if a <= bound else Verdict.FAILS) if ok else Verdict.UNRESOLVED
        vb = claims.within(a, 1 / (2 * b + 1), S3_BAND) if ok else Verdict.UNRESOLVED
        common = dict(
            registered=REGISTERED,
            how=How.EXACT,
            value=a,
            decidable="" if ok else Decidable.NO,
            why=why,
            part=f"β={b:g}",
            source="smoothness_worlds: alpha",
            keys=SPECTRUM_KEYS + ", smoothness.eps, smoothness.alpha_from_dim",
        )
        rows.append(
            claims.row(
                id=f"S3a β={b:g}",
                claim="S3a",
                statement=f"D(ε) grows no faster than ε^(−1/(2β)) = ε^(−{bound:.3g})",
                kind=Kind.PAPER,
                measured=_alpha_text(a, int(w["alpha_levels"])),
                paper=f"≤ 1/(2β) = {bound:.3g} (Table 2)",
                verdict=va,
                # a finite ladder cannot test an asymptotic bound: say which ε it covers
                reading=f"α̂ {a:.3f} [{w['alpha_lo']:.3f}, {w['alpha_hi']:.3f}] vs {bound:.3g}, "
                f"on the ladder down to ε = {eps_min:g} only"
                if ok
                else why,
                **common,
            )
        )
        rows.append(
            claims.row(
                id=f"S3b β={b:g}",
                claim="S3b",
                statement=f"α within 20 % of 1/(2β + 1) = {1 / (2 * b + 1):.3g}",
                kind=Kind.PREDICTION,
                measured=_alpha_text(a, int(w["alpha_levels"])),
                verdict=vb,
                reading=f"α̂ / (1/(2β+1)) = {a * (2 * b + 1):.2f}" if ok else why,
                **common,
            )
        )
    return rows


def s4(runs: pd.DataFrame, trained: pd.DataFrame) -> list[dict]:
    rows = []
    if runs.empty:
        return rows
    betas = sorted(runs["beta"].unique())
    for b in (betas[0], betas[-1]) if len(betas) > 1 else betas:
        g = runs[runs["beta"] == b]
        dims = sorted(g["D"].unique())
        per = [g[g["D"] == d].sort_values("seed")["excess"].to_numpy() for d in dims]
        sat = saturation.saturation(dims, per, increasing=False)
        smooth = b == betas[-1] and len(betas) > 1
        want = (1, S4_SMOOTH_BY) if smooth else (max(dims), math.inf)
        v = Verdict(saturation.consistent(sat, want))
        conv = bool(trained.loc[trained["beta"] == b, "converged"].all())
        stmt = (
            f"trained excess saturates at D ≤ {S4_SMOOTH_BY} (rank 3)"
            if smooth
            else f"trained excess does not saturate before D = {max(dims)}"
        )
        rows.append(
            claims.row(
                id=f"S4 β={b:g}",
                claim="S4",
                part=f"β={b:g}",
                statement=stmt,
                kind=Kind.PREDICTION,
                registered=REGISTERED,
                how=How.OURS,
                measured=f"saturation {sat.label}",
                verdict=claims.gate(v, conv),
                # an unresolved label names its status itself ("unresolved (4–8)")
                reading=(
                    sat.label
                    if sat.status == saturation.UNRESOLVED
                    else f"{sat.status} ({sat.label})"
                )
                + ("; rank 2 suffices: InfoNCE ignores the x-only term" if smooth else ""),
                source="smoothness_trained: excess_mean",
                keys="smoothness.trained, smoothness.dims, smoothness.train_panels, train.*, seeds",
            )
        )
    return rows
