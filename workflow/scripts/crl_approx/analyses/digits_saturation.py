"""Experiment R's verdicts by the noise-aware saturation rule (:mod:`..numerics.saturation`, dated
2026-12-01, issue 26), gated by measured convergence (:mod:`.convergence`), beside the
pre-registered elbow rule's verdicts (:mod:`.digits_tables`, kept as written).

Per pairing and witness curve, from the per-seed values (paired over seeds):

* pairing K<k>: the held-out excess (lower is better) and the entropy effective rank
  (pre-registered statistic; it saturates when it stops rising) must saturate in {K − 1, K}, and
  the entropy rank stay ≤ K at every D > K. Post hoc, beside it and labelled so: the
  variance-weighted effective rank (exp of the entropy of s²/Σs², finding 5 of issue 26);
* pairing halves: the held-out MI bound log N − L/τ (an affine image of the held-out InfoNCE, read
  on it because the rule's tolerance is relative and the InfoNCE's zero is arbitrary) must not
  saturate at D ≤ 10.

A miss on a pairing whose runs did not converge is "unresolved: not converged".
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..numerics.claims import Verdict, combine
from ..numerics.saturation import RULE_DATE, consistent, from_runs
from ..numerics.tiers import CLOSE_TOLERANCE
from .convergence import cell_convergence, gate

#: the D above which pairing 2 must not saturate (pre-registered)
HALVES_NO_SATURATION_D = 10
#: (curve, larger is better, pre-registered) per pairing kind
CLASS_CURVES = (
    ("heldout_excess", False, True),
    ("effective_rank", True, True),
    ("effective_rank_variance", True, False),
)
HALVES_CURVES = (("mi_bound", True, True),)


def convergence_cells(metrics: list[dict], runs: pd.DataFrame, tau: float) -> pd.DataFrame:
    """Per (pairing, D): :func:`.convergence.cell_convergence` against the saturation rule's
    tolerance at the cell, in validation-loss units: CLOSE_TOLERANCE × the held-out excess
    (pairing K) or × τ·MI bound (halves; the InfoNCE scale of its witness)."""
    hist: dict = {}
    for m in metrics:
        hist.setdefault((m["pairing"], m["D"]), []).append([h["val_loss"] for h in m["history"]])
    rows = []
    for (pairing, d), hs in hist.items():
        cell = runs[(runs["pairing"] == pairing) & (runs["D"] == d)]
        value = (
            cell["mi_bound"].mean() * tau if pairing == "halves" else cell["heldout_excess"].mean()
        )
        rows.append(
            {"pairing": pairing, "D": int(d)}
            | cell_convergence(hs, CLOSE_TOLERANCE * abs(value), at_best=True)
        )
    return pd.DataFrame(rows).sort_values(["pairing", "D"], ignore_index=True)


def saturation_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (pairing, curve): the rule's result and its verdict against the prediction."""
    rows = []
    for pairing, part in runs.groupby("pairing", sort=False):
        k = int(part["K"].iloc[0])
        halves = pairing == "halves"
        for curve, increasing, prereg in HALVES_CURVES if halves else CLASS_CURVES:
            if curve not in part:
                continue
            r = from_runs(part, curve, increasing)
            predicted = (HALVES_NO_SATURATION_D + 1, math.inf) if halves else {k - 1, k}
            rows.append(
                {
                    "pairing": pairing,
                    "K": k,
                    "curve": curve,
                    "pre_registered_statistic": prereg,
                    "saturation": r.label,
                    "saturation_status": r.status,
                    "saturation_D": np.nan if r.at is None else r.at,
                    "predicted": f"> {HALVES_NO_SATURATION_D}" if halves else f"{{{k - 1}, {k}}}",
                    "in_prediction": consistent(r, predicted),
                    "reason": r.reason,
                    "rule_date": RULE_DATE,
                }
            )
    return pd.DataFrame(rows)


def _combine(verdicts) -> str:
    """Fails if a part fails, holds if all hold, else unresolved (or not converged): the one
    combiner, :func:`crl_approx.numerics.claims.combine`."""
    return str(combine(verdicts))


def saturation_verdicts(runs: pd.DataFrame, sat: pd.DataFrame, conv: pd.DataFrame) -> pd.DataFrame:
    """One row per pairing: the pre-registered predictions decided by the saturation rule
    (``verdict``; the rank clause as pre-registered: entropy rank ≤ K at every D > K), the
    excess alone, the post hoc variance-rank alternative, and the convergence that gates them."""
    rows = []
    for pairing, part in sat.groupby("pairing", sort=False):
        k = int(part["K"].iloc[0])
        c = conv[conv["pairing"] == pairing]
        converged = bool(c["converged"].all())
        by = part.set_index("curve")["in_prediction"]
        row = {
            "pairing": pairing,
            "K": k,
            "cells_converged": f"{int(c['converged'].sum())}/{len(c)}",
            "converged": converged,
            "best_checkpoint_mean": float(c["best_checkpoint_mean"].mean()),
            "checkpoints": int(c["checkpoints"].max()),
            "max_drop_over_effect": float(c["drop_over_effect"].max()),
        }
        if pairing == "halves":
            row["verdict"] = gate(by["mi_bound"], converged)
        else:
            s = runs[(runs["pairing"] == pairing) & (runs["D"] > k)].groupby("D")
            ent = s["effective_rank"].mean().max() if len(s) else np.nan
            var = s["effective_rank_variance"].mean().max() if len(s) else np.nan
            rank_ok = Verdict.HOLDS if not np.isfinite(ent) or ent <= k else Verdict.FAILS
            var_ok = Verdict.HOLDS if not np.isfinite(var) or var <= k else Verdict.FAILS
            row |= {
                "max_effective_rank_above_K": ent,
                "max_variance_rank_above_K": var,
                "verdict": gate(
                    _combine([by["heldout_excess"], by["effective_rank"], rank_ok]), converged
                ),
                "verdict_excess": gate(by["heldout_excess"], converged),
                "verdict_variance_rank_post_hoc": gate(
                    _combine([by["heldout_excess"], by["effective_rank_variance"], var_ok]),
                    converged,
                ),
            }
        rows.append(row)
    return pd.DataFrame(rows)
