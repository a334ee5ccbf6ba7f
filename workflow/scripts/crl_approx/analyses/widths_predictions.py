"""Experiment W's predictions registered on 2026-12-04 (issue 36; docs/widths.md), read on the
approximation part (excess − the world's floor, :mod:`.widths`):

* **W4** (LCGM): g needs more width than f at every ε both towers read by interpolation: per
  seed the mean over those levels of log(w_g/w_f); holds when its Student-t interval lies above
  0, fails below, else unresolved.
* **W5** (Table 2's LCGM row, compound): from the LCGM's own d₀ to each d of the dimension sweep
  (d_x = d_y = d), f's needed width grows by less than c = log d / log d₀, g's by more (per
  tower, per seed the mean over widths.dim_sweep.eps of log(w(d)/w(d₀)), against log c).
* **W6** (ours): g's grows by less than c too.
* **W7** (mixture): the approximation part at every grid width >= :data:`W7_WIDTH` of each tower
  lies within CLOSE_TOLERANCE of the exact floor.

Every decided verdict on runs that did not converge is "unresolved: not converged"
(:func:`.convergence.gate`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics import powerlaw
from ..numerics import widths as wn
from ..numerics.claims import Verdict, combine
from ..numerics.tiers import CLOSE_TOLERANCE
from . import widths as w
from .convergence import gate

#: W7: the mixture network reaches the exact floor by this width
W7_WIDTH = 8


def _no_levels(prediction, world, statement, measured, verdict=Verdict.UNRESOLVED) -> dict:
    return {
        "prediction": prediction,
        "world": world,
        "statement": statement,
        "measured": measured,
        "verdict": verdict,
        "converged": True,
        "value": math.nan,
        "lo": math.nan,
        "hi": math.nan,
    }


def _seed_widths(eps_rows: pd.DataFrame, levels) -> np.ndarray:
    """(levels, seeds) of the seeds' own widths at ``levels`` (NaN where a seed does not read
    the level by interpolation)."""
    out = []
    for e in levels:
        r = eps_rows[eps_rows["eps"] == e].iloc[0]
        out.append(
            [
                x if st == wn.REACHED else math.nan
                for x, st in zip(r["seed_widths"], r["seed_status"], strict=True)
            ]
        )
    return np.asarray(out, float)


def _both_read(a: pd.DataFrame, b: pd.DataFrame, levels=None) -> list[float]:
    """The levels (of ``levels``, or every level) that every seed of both sweeps reads by
    interpolation (status reached: not at the smallest width, not lost, not below the floor)."""

    def read(rows):
        return {r.eps for r in rows.itertuples() if all(st == wn.REACHED for st in r.seed_status)}

    common = read(a) & read(b)
    wanted = a["eps"] if levels is None else levels
    return [float(e) for e in wanted if e in common]


def _log_ratio(num: pd.DataFrame, den: pd.DataFrame, levels, level) -> tuple:
    """Per seed the mean over ``levels`` of log(w_num / w_den); the seeds' mean and interval."""
    per = np.nanmean(np.log(_seed_widths(num, levels) / _seed_widths(den, levels)), axis=0)
    mean = float(np.mean(per))
    lo, hi = powerlaw.t_interval(mean, per, level)
    return mean, lo, hi, per


def w4(eps, fits, level) -> dict:
    """g needs more width than f at every ε both read (log ratio above 0, paired by seed)."""
    statement = "g needs more width than f at every ε both towers read (approximation part)"
    ef, eg = eps[eps["tower"] == "f"], eps[eps["tower"] == "g"]
    levels = _both_read(ef, eg)
    if not levels:
        return _no_levels("W4", "lcgm", statement, "no ε both towers read by interpolation")
    mean, lo, hi, per = _log_ratio(eg, ef, levels, level)
    verdict = Verdict.HOLDS if lo > 0 else Verdict.FAILS if hi < 0 else Verdict.UNRESOLVED
    converged = bool(fits["converged"].all())
    eps_text = ", ".join(f"{e:g}" for e in levels)
    return {
        "prediction": "W4",
        "world": "lcgm",
        "statement": statement,
        "measured": f"w_g/w_f = {math.exp(mean):.3g} [{math.exp(lo):.3g}, {math.exp(hi):.3g}] "
        f"(geometric mean over ε = {eps_text}, {len(per)} seeds)",
        "verdict": gate(verdict, converged) if math.isfinite(lo) else Verdict.UNRESOLVED,
        "converged": converged,
        "value": math.exp(mean),
        "lo": math.exp(lo),
        "hi": math.exp(hi),
    }


def dim_rows(eps, fits, design: dict, levels, level) -> list[dict]:
    """The dimension sweep, per (d world, tower): the width ratio w(d)/w(d₀) over ``levels``
    (per seed the mean of log ratios, Student-t interval) against Table 2's logarithmic factor
    c = log d / log d₀, and whether it lies below (no growth beyond logarithms) or above."""
    rows = []
    for world in sorted({x for x in eps["world"] if x != "lcgm" and w.is_lcgm(x)}):
        for tower, key in (("f", "d1"), ("g", "d2")):
            d0, d = design["lcgm"][key], design[world][key]
            here = eps[(eps["world"] == world) & (eps["tower"] == tower)]
            base = eps[(eps["world"] == "lcgm") & (eps["tower"] == tower)]
            read = _both_read(here, base, levels)
            c = math.log(d) / math.log(d0)
            out = {"world": world, "tower": tower, "d0": d0, "d": d, "factor_c": c}
            out["levels"] = " ".join(f"{e:g}" for e in read)
            if read:
                mean, lo, hi, _ = _log_ratio(here, base, read, level)
                out |= {"ratio": math.exp(mean), "ratio_lo": math.exp(lo), "ratio_hi": math.exp(hi)}
                reading = "below c" if hi < math.log(c) else "above c" if lo > math.log(c) else ""
            else:
                out |= {"ratio": math.nan, "ratio_lo": math.nan, "ratio_hi": math.nan}
                reading = ""
            conv = fits[fits["world"].isin([world, "lcgm"]) & (fits["tower"] == tower)]
            out["converged"] = bool(conv["converged"].all())
            out["reading"] = reading or (
                "unresolved" if read else "unresolved: no level of dim_sweep.eps read at both d"
            )
            rows.append(out)
    return rows


def _dim_text(rows: list[dict]) -> str:
    """ "f ×0.95 [0.81, 1.1], g ×1.1 [0.92, 1.3]; c = 1.5 (d 16 → 64)": w(d)/w(d₀) per tower."""
    each = [
        f"{r['tower']} ×{r['ratio']:.3g} [{r['ratio_lo']:.3g}, {r['ratio_hi']:.3g}]"
        if math.isfinite(r["ratio"])
        else f"{r['tower']}: no level read at both d"
        for r in rows
    ]
    ends = "; ".join(
        f"c = {r['factor_c']:.3g} (d {r['d0']} → {r['d']})"
        for r in {(x["d0"], x["d"]): x for x in rows}.values()
    )
    return ", ".join(each) + f"; {ends}"


def dim_part(r, grows: bool) -> Verdict:
    """One tower's part: holds when the ratio lies above c (grows) or below c (does not)."""
    if r["reading"] not in ("above c", "below c"):
        return Verdict.UNRESOLVED
    ok = (r["reading"] == "above c") == grows
    return gate(Verdict.HOLDS if ok else Verdict.FAILS, r["converged"])


def w5_w6(dims: list[dict]) -> list[dict]:
    """W5 (Table 2: f does not grow beyond c, g does) and W6 (ours: g does not either)."""
    s5 = "from d₀ to d, f's needed width grows less than log d/log d₀, g's more"
    s6 = "from d₀ to d, g's needed width grows less than log d/log d₀ too"
    if not dims:
        return [
            _no_levels("W5", "lcgm", s5, "no dimension sweep (widths.dim_sweep.dims is empty)"),
            _no_levels("W6", "lcgm", s6, "no dimension sweep (widths.dim_sweep.dims is empty)"),
        ]
    f_rows = [r for r in dims if r["tower"] == "f"]
    g_rows = [r for r in dims if r["tower"] == "g"]
    parts5 = [dim_part(r, grows=False) for r in f_rows] + [dim_part(r, grows=True) for r in g_rows]
    parts6 = [dim_part(r, grows=False) for r in g_rows]
    text5 = _dim_text(dims)
    text6 = _dim_text(g_rows)
    g = g_rows[0]
    conv5 = all(r["converged"] for r in dims)
    conv6 = all(r["converged"] for r in g_rows)
    return [
        {
            "prediction": "W5",
            "world": "lcgm",
            "statement": s5,
            "measured": text5,
            "verdict": combine(parts5),
            "converged": conv5,
            "value": g["ratio"],
            "lo": g["ratio_lo"],
            "hi": g["ratio_hi"],
        },
        {
            "prediction": "W6",
            "world": "lcgm",
            "statement": s6,
            "measured": text6,
            "verdict": combine(parts6),
            "converged": conv6,
            "value": g["ratio"],
            "lo": g["ratio_lo"],
            "hi": g["ratio_hi"],
        },
    ]


def w7(runs, cells, level) -> dict:
    """The mixture's approximation part at every grid width >= W7_WIDTH of each tower within
    CLOSE_TOLERANCE of the exact floor (its Student-t upper end at or below; fails when a lower
    end lies above)."""
    gmm = runs[(runs["world"] == "gmm") & runs["tower"].isin(["f", "g"])]
    statement = (
        f"the approximation part at every width ≥ {W7_WIDTH} lies within "
        f"{CLOSE_TOLERANCE:.0%} of the exact rank-D floor"
    )
    if gmm.empty or gmm["width"].max() < W7_WIDTH:
        return _no_levels("W7", "gmm", statement, f"no mixture width ≥ {W7_WIDTH} in the grid")
    floor = float(gmm["floor"].iloc[0])
    if not floor > 0:  # a world whose rank-D floor is 0 has no relative tolerance to read
        return _no_levels("W7", "gmm", statement, f"the exact floor is {floor:g}: no 10 % of it")
    bar = CLOSE_TOLERANCE * floor
    parts, worst, texts, open_ = [], None, {}, []
    for (tower, width), g in gmm[gmm["width"] >= W7_WIDTH].groupby(["tower", "width"]):
        mean = float(g["approx"].mean())
        lo, hi = powerlaw.t_interval(mean, g["approx"].to_numpy(), level)
        v = Verdict.HOLDS if hi <= bar else Verdict.FAILS if lo > bar else Verdict.UNRESOLVED
        if not math.isfinite(hi):
            v = Verdict.HOLDS if mean <= bar else Verdict.FAILS
        parts.append(v)
        texts.setdefault(tower, []).append(f"{width}: {mean / floor:.1%}")
        if v == Verdict.UNRESOLVED:
            open_.append(f"{tower} {width} [{lo / floor:.1%}, {hi / floor:.1%}]")
        if worst is None or mean / floor > worst[0]:  # the cell furthest above: its interval
            worst = (mean / floor, lo / floor, hi / floor)
    at = cells[(cells["world"] == "gmm") & (cells["width"] >= W7_WIDTH)]
    converged = bool(at["converged"].all())
    measured = "approximation part / floor: " + "; ".join(
        f"{tower} {', '.join(each)}" for tower, each in texts.items()
    )
    if combine(parts) == Verdict.UNRESOLVED:  # why the data leave it open
        measured += " (" + ", ".join(open_) + f" straddle{'s' * (len(open_) == 1)} "
        measured += f"{CLOSE_TOLERANCE:.0%})"
    return {
        "prediction": "W7",
        "world": "gmm",
        "statement": statement,
        "measured": measured,
        "verdict": gate(combine(parts), converged),
        "converged": converged,
        "value": worst[0],
        "lo": worst[1],
        "hi": worst[2],
    }
