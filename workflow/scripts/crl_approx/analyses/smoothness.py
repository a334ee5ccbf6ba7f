"""Experiment S's tables, from the worlds' exact computations and the trained cells, and the
rule ``assemble_smoothness`` (the claims S1–S4 are judged in :mod:`.smoothness_claims`)."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd

from ..numerics import claims
from ..numerics.tiers import CLOSE_TOLERANCE
from .convergence import cell_convergence
from .smoothness_claims import SPECTRUM_KEYS, s1, s2, s3, s4
from .smoothness_relation import relation, relation_dims

log = logging.getLogger(__name__)


def _read(paths) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)


def world_table(world_paths) -> pd.DataFrame:
    return _read(world_paths).sort_values("beta", ignore_index=True)


def with_relation(worlds: pd.DataFrame) -> pd.DataFrame:
    """The fitted relation γ̂ = c₀ + c₁·β over the worlds with a fitted γ̂ (β < 2), and each such
    world's γ predicted by the line through the others (leave-one-out; NaN with fewer than three
    fitted worlds): where a world not in the fit should fall."""
    out = worlds.copy()
    ok = out["beta"].lt(2) & np.isfinite(out["gamma"])
    b, g = out.loc[ok, "beta"].to_numpy(float), out.loc[ok, "gamma"].to_numpy(float)
    slope, icpt = np.polyfit(b, g, 1) if len(b) >= 2 else (math.nan, math.nan)
    out["relation_slope"], out["relation_intercept"] = slope, icpt
    loo = np.full(len(out), math.nan)
    if len(b) >= 3:
        for k, i in enumerate(np.nonzero(ok.to_numpy())[0]):
            rest = np.arange(len(b)) != k
            slope_k, icpt_k = np.polyfit(b[rest], g[rest], 1)
            loo[i] = icpt_k + slope_k * b[k]
    out["gamma_loo"] = loo
    return out


def floor_ok(floors: pd.DataFrame) -> pd.Series:
    """The ``converged`` column ``compute_smoothness_floor`` wrote (the rule is
    :func:`crl_approx.numerics.smoothness.floor_converged`), as booleans."""
    return floors["converged"].astype(bool)


def _surface(d: pd.DataFrame) -> np.ndarray:
    t = np.log(1.0 / d["eps"].to_numpy(float))
    b = d["beta"].to_numpy(float)
    return np.c_[np.ones(len(d)), b, t, b * t]


def loo_dims(eps: pd.DataFrame) -> pd.Series:
    """Each converged D(ε) of a world with β < 2 predicted from the other such worlds: log D fitted
    as c₀ + c₁β + (c₂ + c₃β)·log(1/ε) (a power law in ε whose exponent and constant move linearly
    with β) on their converged levels; NaN where the others do not determine the surface (fewer
    than two other worlds, or one with a single converged level: a rank-deficient fit, whose
    predictions away from that level would be lstsq's arbitrary minimum-norm choice)."""
    use = eps["beta"].lt(2) & eps["converged"].astype(bool) & np.isfinite(eps["D_interp"])
    out = pd.Series(math.nan, index=eps.index)
    for b in eps.loc[use, "beta"].unique():
        other = eps[use & (eps["beta"] != b)]
        design = _surface(other)
        if np.linalg.matrix_rank(design) < design.shape[1]:
            continue
        coef = np.linalg.lstsq(design, np.log(other["D_interp"]), rcond=None)[0]
        mine = eps[use & (eps["beta"] == b)]
        out[mine.index] = np.exp(_surface(mine) @ coef)
    return out


def eps_table(eps_paths, betas, floors: pd.DataFrame) -> pd.DataFrame:
    """D(ε) per world: the truncation's on the fine grid, its leave-one-out prediction from the
    other worlds (:func:`loo_dims`), and the smallest D of ``dims`` whose converged rank-D floor
    is ≤ ε (NaN if none: the floor is computed at those D only)."""
    rows = []
    for ep, beta in zip(eps_paths, betas, strict=True):
        rows.append(pd.read_csv(ep).assign(beta=beta))
    out = pd.concat(rows, ignore_index=True)
    out = out[["beta", "eps", "D_needed", "D_interp", "converged"]].copy()
    out["D_loo"] = loo_dims(out)
    ok = floors[floor_ok(floors)]
    out["D_floor"] = [
        ok.loc[(ok["beta"] == b) & (ok["rank_d_floor_excess_risk"] <= e), "D"].min()
        for b, e in zip(out["beta"], out["eps"], strict=True)
    ]
    return out


def curves_table(eig_paths, excess_paths, betas, floors: pd.DataFrame) -> pd.DataFrame:
    """Long table for the figure: λ_i, truncation excess and floor against i or D, per world."""
    parts = []
    for eg, ex, beta in zip(eig_paths, excess_paths, betas, strict=True):
        e = pd.read_csv(eg)
        parts.append(
            pd.DataFrame(
                {
                    "beta": beta,
                    "kind": "lambda",
                    "x": e["index"],
                    "value": e["lambda"],
                    "converged": e["converged"],
                }
            )
        )
        x = pd.read_csv(ex)
        parts.append(
            pd.DataFrame(
                {
                    "beta": beta,
                    "kind": "truncation_excess",
                    "x": x["D"],
                    "value": x["truncation_excess"],
                    "converged": x["converged"],
                }
            )
        )
        f = floors[floors["beta"] == beta]
        f_ok = floor_ok(f)
        parts.append(
            pd.DataFrame(
                {
                    "beta": beta,
                    "kind": "floor",
                    "x": f["D"],
                    "value": f["rank_d_floor_excess_risk"],
                    "converged": f_ok,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def trained_runs(metric_paths) -> pd.DataFrame:
    rows = []
    for p in metric_paths:
        m = json.loads(open(p).read())
        rows.append(
            {
                "beta": float(m["beta"]),
                "D": int(m["D"]),
                "seed": int(m["seed"]),
                "excess": float(m["mlp_excess_risk"]),
                "val_losses": [h["val_loss"] for h in m["history"]],
                "source": str(p),
            }
        )
    return pd.DataFrame(rows)


def trained_table(runs: pd.DataFrame, floors: pd.DataFrame) -> pd.DataFrame:
    """Per trained cell: excess over seeds, the floor on the same grid, the part above it."""
    if runs.empty:
        return pd.DataFrame(
            columns=[
                "beta",
                "D",
                "excess_mean",
                "excess_sd",
                "n_seeds",
                "floor",
                "truncation",
                "above_floor",
                "floor_converged",
                "above_floor_converged",
                "best_at_end",
                "converged",
            ]
        )
    floors = floors.set_index(["beta", "D"])
    rows = []
    for (beta, d), g in runs.groupby(["beta", "D"], sort=True):
        mean = float(g["excess"].mean())
        conv = cell_convergence(list(g["val_losses"]), CLOSE_TOLERANCE * abs(mean))
        fl = floors.loc[(beta, d)]
        fl_ok = bool(fl["converged"])
        gap = mean - float(fl["rank_d_floor_excess_risk"])
        # the gap above the floor is read at its own scale: converged within 10 % of the gap
        gap_conv = cell_convergence(list(g["val_losses"]), CLOSE_TOLERANCE * abs(gap))
        rows.append(
            {
                "beta": beta,
                "D": int(d),
                "excess_mean": mean,
                "excess_sd": float(g["excess"].std(ddof=1)) if len(g) > 1 else math.nan,
                "n_seeds": len(g),
                "floor": float(fl["rank_d_floor_excess_risk"]),
                "truncation": float(fl["truncation_excess_risk"]),
                # an unconverged floor is an upper bound: the part above it is not known
                "above_floor": mean - float(fl["rank_d_floor_excess_risk"]) if fl_ok else math.nan,
                "floor_converged": fl_ok,
                # not converged at the gap's scale: still improving, the gap an upper bound
                "above_floor_converged": bool(gap_conv["converged"]),
                "best_at_end": conv["best_at_end"],
                "converged": conv["converged"],
            }
        )
    return pd.DataFrame(rows)


def run_assemble(inputs, smooth: dict, output) -> dict:
    """The ``assemble_smoothness`` rule."""
    from ..runtime import write_csv

    # each world's β in the inputs' order (the per-world files come in the same order)
    betas = [float(pd.read_csv(p)["beta"].iloc[0]) for p in inputs.worlds]
    worlds = with_relation(world_table(inputs.worlds))
    floors = _read(inputs.floors)  # every world's floor.csv, read once
    eps = eps_table(inputs.eps, betas, floors)
    curves = curves_table(inputs.eigenvalues, inputs.excess, betas, floors)
    runs = trained_runs(list(inputs.metrics))
    trained = trained_table(runs, floors)
    rows = [s1(eps, SPECTRUM_KEYS), *s2(worlds), relation(worlds), relation_dims(eps)]
    rows += s3(worlds, float(min(smooth["eps"])))
    rows += s4(runs, trained)
    table = pd.DataFrame(rows, columns=list(claims.COLUMNS))
    log.info("claims:\n%s", table[["id", "measured", "verdict"]].to_string(index=False))
    for name, df in (
        ("worlds", worlds),
        ("eps", eps),
        ("trained", trained),
        ("claims", table),
        ("curves", curves),
    ):
        write_csv(df, getattr(output, name))
    return {"worlds": worlds, "eps": eps, "trained": trained, "claims": table}
