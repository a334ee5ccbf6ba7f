"""The report's training-dynamics section (results/tables/dynamics.csv, dynamics_lcgm.csv): every
D with its verdict and reason. The predictions' rows of the summary are the claims table's
(crl_approx.analyses.claims.dynamics)."""

from __future__ import annotations

import math

import pandas as pd

from ..numerics import claims

#: a cell with no verdict to give (one direction: no order to observe)
NOT_APPLICABLE = "not applicable"


def _css(verdict: str) -> str:
    """The report's class of a verdict (the one map, :func:`crl_approx.numerics.claims.css`)."""
    return "none" if verdict == NOT_APPLICABLE else claims.css(verdict)


def _g(value, digits=3) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _rho(value) -> str:
    return "—" if not math.isfinite(value) else f"{value:+.2f}"


def context(table_csv) -> dict:
    """Rows of the section's table, printed as the template shows them."""
    t = pd.read_csv(table_csv)
    rows = []
    for r in t.to_dict("records"):
        rows.append(
            {
                "objective": r["objective"],
                "D": int(r["D"]),
                "excess": f"{r['final_excess']:.3e}",
                "resolvable": int(r["resolvable"]),
                "f_min": _g(r["f_min_cos2"]),
                "g_min": _g(r["g_min_cos2"]),
                "f_floor": _g(r["f_floor_min_cos2"]),
                "floor_f": _g(r["floor_f_min_cos2"]),
                "steps": str(r["acquisition_steps"]).replace(";", " · "),
                "rho": _rho(r["rho_coefficient"]),
                "capture_steps": str(r["capture_steps"]).replace(";", " · "),
                "rho_capture": _rho(r["rho_capture"]),
                "misscaled": _g(r["final_misscaled_share"], 2),
                "alignment": r["alignment_verdict"],
                "alignment_css": _css(r["alignment_verdict"]),
                "alignment_reason": r["alignment_reason"],
                "order": r["order_verdict"],
                "order_css": _css(r["order_verdict"]),
                "order_reason": r["order_reason"],
            }
        )
    return {"rows": rows}


def lcgm_context(table_csv) -> list[dict]:
    """Rows of the LCGM subsection: per D, both sides' judged measure, pass step, verdicts."""
    rows = []
    for r in pd.read_csv(table_csv).to_dict("records"):
        row = {"D": int(r["D"]), "verdict": r["verdict"], "css": _css(r["verdict"])}
        for s in ("f", "g"):
            step = r[f"{s}_pass_step"]
            row |= {
                f"{s}_rank": int(r[f"{s}_target_rank"]),
                f"{s}_judged": r[f"{s}_judged"],
                f"{s}_final": _g(r[f"{s}_judged_final"]),
                f"{s}_min": _g(r[f"{s}_final_min_cos2"]),
                f"{s}_step": "never" if not math.isfinite(step) else f"{step:g}",
                f"{s}_verdict": r[f"{s}_verdict"],
                f"{s}_reason": r[f"{s}_reason"],
            }
        rows.append(row)
    return rows


def _cells(t: pd.DataFrame, column: str) -> list[dict]:
    return [
        {"objective": r.objective, "D": int(r.D), "value": getattr(r, column)}
        for r in t.itertuples()
    ]


def _verdict_counts(verdicts: pd.Series) -> dict[str, int]:
    """How many cells give each verdict of the one enumeration (0 for those none gives)."""
    return {str(v): int((verdicts == v).sum()) for v in claims.Verdict}


def says(t: pd.DataFrame, cfg: dict) -> dict:
    """What docs/dynamics.md's generated prose states about ``dynamics.csv``, computed here so the
    template prints (``cfg``: the config's ``dynamics`` section). Cells with D ≥ 2 carry an order;
    the optimum's own span is reached where ``f_floor_min_cos2`` ≥ 1 − ``alignment_tol``."""
    bar = 1 - cfg["alignment_tol"]
    multi = t[t.D >= 2]
    verdicts = t.alignment_verdict
    unresolved = t[verdicts == claims.Verdict.UNRESOLVED]
    out = {
        "bar": bar,
        "order_holds": int((multi.order_verdict == claims.Verdict.HOLDS).sum()),
        "n_multi": len(multi),
        "order_cells": [
            {
                "objective": r.objective,
                "D": int(r.D),
                "rho": r.rho_coefficient,
                "strict": int(r.n_seeds_strictly_ordered),
                "seeds": int(r.n_seeds),
            }
            for r in multi.itertuples()
        ],
        "strict": int(multi.n_seeds_strictly_ordered.sum()),
        "runs": int(multi.n_seeds.sum()),
        "below_excess": multi.learned_below_excess.tolist(),
        "capture_steps": [str(s).replace(";", " · ") for s in multi.capture_steps],
        "alignment": _verdict_counts(verdicts),
        "n": len(t),
        "unresolved": None,
        "floor_f": _cells(t[t.objective == t.objective.iloc[0]], "floor_f_min_cos2"),
        "reached": _cells(t[t.f_floor_min_cos2 >= bar], "f_floor_min_cos2"),
        "missed": _cells(t[t.f_floor_min_cos2 < bar], "f_floor_min_cos2"),
        "misscaled": t.final_misscaled_share.tolist(),
        "off": [int(d) for d in t[t.floor_f_min_cos2 < bar].D.unique()],
    }
    if "converged" in t:
        out["converged"] = int((t.converged == True).sum())  # noqa: E712 (a column of bools)
    if "budget_agrees" in t:
        out["budget_agrees"] = int((t.budget_agrees == True).sum())  # noqa: E712
        out["budget_checked"] = int(t.budget_agrees.notna().sum())
    if len(unresolved):
        r = unresolved.iloc[0]
        out["unresolved"] = {
            "objective": r.objective,
            "D": int(r.D),
            "min_cos2": min(r.f_min_cos2, r.g_min_cos2),
        }
    return out


def lcgm_says(t: pd.DataFrame) -> dict:
    """What docs/dynamics.md's generated prose states about ``dynamics_lcgm.csv``: the registered
    verdicts' counts, and the D below the target ranks (D < K − 1) and from D = K on."""
    k = int(t.f_target_rank.iloc[0]) + 1
    return {
        "counts": _verdict_counts(t.verdict),
        "n": len(t),
        "low": t[t.D < t.f_target_rank].to_dict("records"),
        "high": t[t.D >= k].to_dict("records"),
    }
