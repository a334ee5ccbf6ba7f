"""Experiment R's tables, elbows and verdicts (rule assemble_digits), from every run's held-out
numbers (:mod:`.digits`) and the exact class operator.

The pre-registered predictions (config/config.yaml, section digits; docs/experiment_r.md) are
tested here with the elbow rule of Experiment 3, passed in as ``elbow_fn`` (default
:func:`.probes.elbow`, looked up at call time so that a fix of the rule applies here too):

* pairing K<k>: the elbows of the held-out excess and of the effective rank lie in {K − 1, K}, and
  the effective rank is ≤ K at every D > K;
* pairing halves: the elbow of the held-out InfoNCE lies above D = 10 (no saturation at 10).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..models import digits as dg
from ..numerics.claims import Verdict
from ..numerics.stats import summarise
from . import probes
from .digits import evaluate_run, halves_cancorr
from .digits_saturation import convergence_cells, saturation_rows, saturation_verdicts

log = logging.getLogger(__name__)

SWEEP_METRICS = (
    "heldout_excess",
    "heldout_infonce",
    "mi_bound",
    "probe_logloss",
    "probe_accuracy",
    "effective_rank",
    "effective_rank_variance",
    "best_checkpoint",
    "val_loss_best",
    "val_loss_last",
    "train_seconds",
)
#: the D above which pairing 2 must not saturate (pre-registered)
HALVES_NO_SATURATION_D = 10


def _elbow(elbow_fn, dims, values, fraction, increasing, log):
    """The elbow by the LCGM's rule (or ``elbow_fn``); NaN where no D stays in the band."""
    fn = elbow_fn or probes.elbow
    e = fn(list(dims), list(values), fraction, increasing, log=log)
    return np.nan if e is None else int(e)


def elbow_table(sweep: pd.DataFrame, fraction: float, elbow_fn=None) -> pd.DataFrame:
    """One row per (pairing, witness curve): the elbow of the seed-mean curve, the predicted set
    and whether the elbow lies in it."""
    rows = []
    for pairing, part in sweep.groupby("pairing", sort=False):
        part = part.sort_values("D")
        k = int(part["K"].iloc[0])
        # (curve, increasing, log scale) as the LCGM's elbow reads them: the excess falls over
        # decades (log); the effective rank and the halves' InfoNCE (which can be negative) linear
        if pairing == "halves":
            curves = (("heldout_infonce", False, False),)
        else:
            curves = (("heldout_excess", False, True), ("effective_rank", True, False))
        for curve, increasing, log in curves:
            e = _elbow(elbow_fn, part["D"], part[f"{curve}_mean"], fraction, increasing, log)
            if pairing == "halves":  # no elbow at all (NaN) is not evidence either way: a miss
                predicted, holds = f"> {HALVES_NO_SATURATION_D}", e > HALVES_NO_SATURATION_D
            else:
                predicted, holds = f"{{{k - 1}, {k}}}", e in (k - 1, k)
            rows.append(
                {
                    "pairing": pairing,
                    "K": k,
                    "curve": curve,
                    "elbow_D": e,
                    "predicted": predicted,
                    "holds": bool(holds),
                    "fraction": fraction,
                }
            )
    return pd.DataFrame(rows)


def verdict_table(sweep: pd.DataFrame, elbows: pd.DataFrame) -> pd.DataFrame:
    """One verdict per pairing: every elbow inside its prediction and (pairing 1) the largest
    effective rank over D > K at most K."""
    rows = []
    for pairing, part in elbows.groupby("pairing", sort=False):
        k = int(part["K"].iloc[0])
        s = sweep[sweep["pairing"] == pairing]
        row = {"pairing": pairing, "K": k}
        for r in part.itertuples():
            row[f"elbow_{r.curve}"] = r.elbow_D
        ok = bool(part["holds"].all())
        if pairing != "halves":
            above = s.loc[s["D"] > k, "effective_rank_mean"]
            row["max_effective_rank_above_K"] = float(above.max()) if len(above) else np.nan
            ok = ok and bool(len(above) == 0 or above.max() <= k)
        row["verdict"] = Verdict.HOLDS if ok else Verdict.FAILS
        rows.append(row)
    return pd.DataFrame(rows)


def table1_k(digits: dict) -> int:
    """The K of the real-image Table 1: the configured grouping with the most classes (the 10
    digits in the default config; any grouping set, issue 26)."""
    return max(len(g["groups"]) for g in digits["groupings"])


def table1(classes: pd.DataFrame, sweep: pd.DataFrame, k: int) -> pd.DataFrame:
    """The real-image Table 1 for the grouping with k classes: per D of its sweep the exact tail,
    truncation excess and rank-D floor (all 0 at D ≥ K: the class PMI has rank K) beside the
    trained encoders' held-out excess."""
    ops = classes[classes["K"] == k].set_index("D")
    rows = []
    for r in sweep[sweep["pairing"] == f"K{k}"].sort_values("D").itertuples():
        d = int(r.D)
        exact = ops.loc[d] if d in ops.index else None
        rows.append(
            {
                "K": k,
                "D": d,
                "spectral_tail": float(exact["spectral_tail"]) if exact is not None else 0.0,
                "truncation_excess_risk": float(exact["truncation_excess_risk"])
                if exact is not None
                else 0.0,
                "rank_d_floor": float(exact["rank_d_floor"]) if exact is not None else 0.0,
                "mlp_heldout_excess_mean": r.heldout_excess_mean,
                "mlp_heldout_excess_sd": r.heldout_excess_sd,
            }
        )
    return pd.DataFrame(rows)


def curves(metrics: list[dict]) -> pd.DataFrame:
    """The validation loss per checkpoint of every run (the budget's convergence evidence)."""
    rows = []
    for m in metrics:
        steps = m["steps"]
        n = len(m["history"])
        for h in m["history"]:
            rows.append(
                {
                    "pairing": m["pairing"],
                    "D": m["D"],
                    "seed": m["seed"],
                    "checkpoint": h["epoch"],
                    "step": round(steps * h["epoch"] / n),
                    "train_loss": h["train_loss"],
                    "val_loss": h["val_loss"],
                }
            )
    return pd.DataFrame(rows)


def convergence_table(curve: pd.DataFrame) -> pd.DataFrame:
    """The budget's evidence per (pairing, D), seed means: the validation loss at the middle
    checkpoint, at the best (lowest) and at the last, the relative drop over the second half of
    the steps ((middle − last) / |last|) and the best checkpoint's position."""
    rows = []
    for (pairing, d), part in curve.groupby(["pairing", "D"], sort=False):
        n = int(part["checkpoint"].max())
        by = part.groupby("checkpoint")["val_loss"].mean()
        mid, last = float(by.loc[(n + 1) // 2]), float(by.loc[n])
        best = part.loc[part.groupby("seed")["val_loss"].idxmin(), "checkpoint"]
        rows.append(
            {
                "pairing": pairing,
                "D": int(d),
                "checkpoints": n,
                "val_loss_mid": mid,
                "val_loss_last": last,
                "val_loss_min": float(by.min()),
                "second_half_rel_drop": (mid - last) / abs(last),
                "best_checkpoint_mean": float(best.mean()),
            }
        )
    return pd.DataFrame(rows)


def run_assemble(inputs, digits: dict, tau: float, output, elbow_fn=None) -> pd.DataFrame:
    """The ``assemble_digits`` rule: every run evaluated, the sweep, elbow, verdict, Table 1,
    convergence, singular-value and canonical-correlation tables, and example pairs."""
    from ..integrity import load_json, load_npz, same_job, save_npz
    from ..runtime import write_csv

    data = load_npz(inputs.images)
    metrics, evals = [], []
    for path, c in zip(inputs.metrics, inputs.checkpoints, strict=True):
        m, rec = load_json(path, with_record=True)
        ck, ck_rec = load_npz(c, with_record=True)
        same_job([(path, rec), (c, ck_rec)])
        metrics.append(m)
        evals.append(evaluate_run(m, ck, data, digits, tau))
    for m, e in zip(metrics, evals, strict=True):
        e["train_seconds"] = m["train_seconds"]
    runs = pd.DataFrame([{k: v for k, v in e.items() if k != "singular_values"} for e in evals])
    sweep = summarise(runs, ["pairing", "K", "D"], [c for c in SWEEP_METRICS if c in runs])
    order = {p: i for i, p in enumerate(dict.fromkeys(runs["pairing"]))}
    sweep = sweep.sort_values(
        ["pairing", "D"], key=lambda c: c.map(order) if c.name == "pairing" else c
    )
    elbows = elbow_table(sweep, digits["elbow_fraction"], elbow_fn)
    conv = convergence_cells(metrics, runs, tau)
    sat = saturation_rows(runs)
    verdicts = saturation_verdicts(runs, sat, conv).merge(
        verdict_table(sweep, elbows)[["pairing", "verdict"]].rename(
            columns={"verdict": "verdict_elbow_rule"}
        ),
        on="pairing",
    )
    elbows = elbows.merge(
        sat, on=["pairing", "K", "curve"], how="outer", sort=False, suffixes=("", "_sat")
    )
    elbows["predicted"] = elbows["predicted"].fillna(elbows.pop("predicted_sat"))
    elbows = elbows.sort_values("pairing", key=lambda c: c.map(order), kind="stable")
    for r in verdicts.itertuples():
        log.info("pairing %s: %s", r.pairing, r.verdict)
    classes = pd.read_csv(inputs.classes)
    sv = pd.DataFrame(
        [
            {"pairing": e["pairing"], "D": e["D"], "seed": e["seed"], "index": i + 1, "sv": s}
            for e in evals
            for i, s in enumerate(e["singular_values"])
        ]
    )
    sv["sv_normalised"] = sv["sv"] / sv.groupby(["pairing", "D", "seed"])["sv"].transform("max")
    write_csv(runs, output.runs)
    write_csv(sweep, output.sweep)
    write_csv(elbows, output.elbow)
    write_csv(verdicts, output.verdicts)
    write_csv(table1(classes, sweep, table1_k(digits)), output.table1)
    curve = curves(metrics)
    write_csv(curve, output.curves)
    extra = conv.drop(columns=["checkpoints", "best_checkpoint_mean"])
    write_csv(convergence_table(curve).merge(extra, on=["pairing", "D"]), output.convergence)
    write_csv(sv, output.singular_values)
    write_csv(halves_cancorr(data), output.cancorr)
    save_npz(output.examples, examples(data, digits))
    return verdicts


def examples(data: dict, digits: dict) -> dict:
    """n_examples held-out pairs of each pairing, in raw pixels: class pairs of the first
    grouping (seed 0's held-out stream) and image halves."""
    from ..training.digits import class_split_pairs

    n = digits["n_examples"]
    groups = digits["groupings"][0]["groups"]
    args = (data["pixels"], data["labels"], data["codes"], groups, digits, 0, "test", n)
    x, y, p = class_split_pairs(*args)
    test = np.flatnonzero(data["codes"] == 2)[:n]
    top, bottom = dg.halves(data["pixels"][test])
    return {
        "class_x": x,
        "class_y": y,
        "class_zx": p["zx"],
        "class_zy": p["zy"],
        "half_x": top,
        "half_y": bottom,
        "half_label": data["labels"][test],
    }
