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
