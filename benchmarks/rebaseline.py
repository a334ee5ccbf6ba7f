"""A re-baseline, cell by cell: a finished run's tables against the reference record of the run
before a change that moves trained numbers by design (a kernel that rounds otherwise: training
is chaotic, so a float32 perturbation of a step moves a trained number by up to its seed noise).

``crl_approx.render.reference.compare`` flags every cell that is not within its noise; a trained
number whose table keeps no sd beside it can only be flagged there ("rounding"). This sorts the
flagged cells, so that a closing note can show every table cell old against new:

- a mean beside its seed sd: compare's own rule (|new − old| ≤ 3 × the larger sd); a cell
  flagged on it is a *miss*;
- a per-seed table (PER_SEED: a row per seed): each cell's mean over its seeds, new against old,
  by compare's rule for a mean (beyond it, a *miss*); and how many seeds' values moved beyond
  3 × the sd over the cell's seeds, beside how many would if the change were a fresh draw of
  seed noise (:func:`exceed_by_noise`: with 3 seeds about one in seven); a cell the change left
  bitwise alone (a step it does not touch) is counted apart;
- every other number (a fit, a ratio, a count from trained numbers): no noise estimate; its
  relative change, summarised per table (median, largest) with the largest cells listed;
- text (labels, verdicts, sentences with numbers in them): every changed cell, old and new; those
  that changed more than the numbers they quote (:func:`numbers_only`) are ``readings``.

Exact computations must not move at all: a flagged cell of a table that holds no trained number
would show up among the last two kinds, and the record lists them by table.

    python3 benchmarks/rebaseline.py --run /tmp/crl-default-run \\
        [--reference benchmarks/reference_run.json] [--out benchmarks/rebaseline.json]
        [--change WORDS --after WORDS --before WORDS --reference-note WORDS]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from crl_approx.render import reference  # noqa: E402

#: largest relative changes listed per table of cells without a noise estimate
LIST = 5


#: the tables with a row per seed, and the columns that name a row's cell (its seeds the rest)
PER_SEED = {
    "encoder_runs_gmm.csv": ("dataset", "objective", "score", "D"),
    "sample_size_runs.csv": ("protocol", "pool_size", "budget_multiplier", "lr", "D"),
    "widths_runs.csv": ("world", "tower", "width", "budget"),
    "digits_singular_values.csv": ("pairing", "D", "index"),
}


def exceed_by_noise(seeds: int, draws: int = 400_000) -> float:
    """How often a seed's value would move beyond 3 sample sds of its cell's seeds (the sd over
    the old values, its own among them, as :func:`per_seed` takes it) if its new value were a
    fresh draw of seed noise: simulated (normal seeds, a fixed generator), since the old value
    enters both the move and the sd (about 14 % for 3 seeds)."""
    rng = np.random.default_rng(0)
    old = rng.standard_normal((draws, seeds))
    new = rng.standard_normal(draws)
    sd = old.std(axis=1, ddof=1)
    return float(np.mean(np.abs(new - old[:, 0]) > reference.SEED_SDS * sd))


def per_seed(name: str, ref: dict, ours: pd.DataFrame) -> dict:
    """A per-seed table, cell by cell (its rows grouped by PER_SEED's columns): each trained
    column's seeds against 3 × the sd over the reference's seeds (``beyond``, of ``values``,
    and what seed noise alone would give), and each cell's mean over seeds, new against old,
    within 3 × the larger of the two sds (compare's rule for a mean; ``mean_misses``). A column
    constant over each cell's seeds is not judged so: its largest relative change is listed
    (``constant_columns``)."""
    old = pd.DataFrame(ref)
    keys = list(PER_SEED[name])
    out = {"values": 0, "beyond": 0, "cells": 0, "mean_misses": [], "largest_mean_over_sd": 0.0}
    out["unchanged_cells"] = 0
    trained = [
        c
        for c in old.columns
        if c not in keys
        and c != "seed"
        and pd.api.types.is_numeric_dtype(old[c])
        and not np.allclose(
            old[c].to_numpy(float), ours[c].to_numpy(float), rtol=0, atol=0, equal_nan=True
        )
    ]
    groups = old.groupby(keys, dropna=False).groups
    # a column constant over every cell's seeds (a world's floor repeated on its rows) is no
    # per-seed value: its change is listed with the cells without a noise estimate
    constant = [
        c
        for c in trained
        if all(old.loc[r, c].nunique(dropna=False) <= 1 for r in groups.values())
        and all(ours.loc[r, c].nunique(dropna=False) <= 1 for r in groups.values())
    ]
    trained = [c for c in trained if c not in constant]
    out["constant_columns"] = {
        c: max(relative(b, a) for a, b in zip(old[c], ours[c], strict=True)) for c in constant
    }
    seeds = old.groupby(keys, dropna=False).size().max()
    out["seeds"] = int(seeds)
    out["expected_beyond_share"] = exceed_by_noise(int(seeds))
    for key, rows in groups.items():
        for c in trained:
            a = old.loc[rows, c].astype(float)
            b = ours.loc[rows, c].astype(float)
            if a.isna().all() and b.isna().all():
                continue
            if np.array_equal(a.to_numpy(), b.to_numpy(), equal_nan=True):
                out["unchanged_cells"] += 1  # a step the change does not touch (ATen's, or none)
                continue
            sd_old, sd_new = a.std(ddof=1), b.std(ddof=1)
            out["values"] += int(a.notna().sum())
            out["beyond"] += int(((b - a).abs() > reference.SEED_SDS * sd_old).sum())
            out["cells"] += 1
            sd = max(sd_old, sd_new)
            delta = abs(b.mean() - a.mean())
            if sd > 0:
                out["largest_mean_over_sd"] = max(out["largest_mean_over_sd"], delta / sd)
            if not delta <= reference.SEED_SDS * sd + reference.ATOL:
                out["mean_misses"].append(
                    {
                        "cell": [str(k) for k in key],
                        "column": c,
                        "old": a.mean(),
                        "new": b.mean(),
                        "sd": sd,
                    }
                )
    return out


def relative(new, old) -> float:
    a, b = float(new), float(old)
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 else 0.0


def sort_misses(run: Path, record: dict) -> dict:
    misses = reference.compare(run, record)
    out = {"cells": reference.cell_count(record), "flagged": len(misses), "tables": {}}
    text, misses_sd = [], []
    for m in misses:
        name = m["table"]
        t = out["tables"].setdefault(name, {"seed_sd_misses": 0, "unjudged": []})
        if "problem" in m:
            text.append(m)
            continue
        if m["basis"] == "text" or m["basis"] == "missing":
            text.append(m)
        elif m["basis"].endswith("seed sd"):
            t["seed_sd_misses"] += 1
            misses_sd.append(m)
        elif name in PER_SEED:
            t["per_seed_flagged"] = t.get("per_seed_flagged", 0) + 1
        else:
            t["unjudged"].append(m | {"relative": relative(m["ours"], m["reference"])})
    for t in out["tables"].values():
        changes = sorted(t.pop("unjudged"), key=lambda m: -m["relative"])
        t["unjudged"] = len(changes)
        if changes:
            t["unjudged_relative_median"] = statistics.median(m["relative"] for m in changes)
            t["unjudged_largest"] = [
                {k: m[k] for k in ("column", "row", "ours", "reference", "relative")}
                for m in changes[:LIST]
            ]
    for name in PER_SEED:
        if name in out["tables"]:
            ours = pd.read_csv(run / "results" / "tables" / name)
            out["tables"][name]["per_seed"] = per_seed(name, record["tables"][name], ours)
            misses_sd += [
                m | {"table": name} for m in out["tables"][name]["per_seed"]["mean_misses"]
            ]
    out["seed_noise_misses"] = misses_sd
    out["seed_sd_cells"], out["seed_sd_largest"] = seed_sd_cells(record, run)
    out["text"] = text
    out["readings"] = [m for m in text if not numbers_only(m)]
    return out


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")


def numbers_only(miss: dict) -> bool:
    """Whether a changed text cell changed only in the numbers it quotes (the same sentence with
    every number masked); a blank and a number, or a label for another, is a change of reading."""
    a, b = miss.get("ours"), miss.get("reference")
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    return NUMBER.sub("#", a) == NUMBER.sub("#", b)


def seed_sd_cells(record: dict, run: Path) -> tuple[int, float]:
    """How many of the record's cells are judged by their seed sd (a column beside its sd), and
    the largest |new − old| over the larger of the two sds among them."""
    count, largest = 0, 0.0
    for name, table in record["tables"].items():
        ours = pd.read_csv(run / "results" / "tables" / name)
        for column, values in table.items():
            sd_col = reference.sd_column(column, table)
            if sd_col is None or column not in ours.columns or len(ours) != len(values):
                continue
            for row, old in enumerate(values):
                count += 1
                new = reference._number(ours[column].iloc[row])
                old = reference._number(old)
                sds = [
                    reference._number(table[sd_col][row]),
                    reference._number(ours[sd_col].iloc[row]),
                ]
                sd = max((s for s in sds if s is not None and math.isfinite(s)), default=0.0)
                if None not in (new, old) and math.isfinite(new) and math.isfinite(old) and sd > 0:
                    largest = max(largest, abs(new - old) / sd)
    return count, largest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--reference", type=Path, default=reference.RECORD)
    ap.add_argument("--out", type=Path)
    # what the record compares, in words, for its generated block (docs/performance.md)
    ap.add_argument("--change", default="the fused kernels", help="what moved the numbers")
    ap.add_argument("--after", default="`fused`", help="the run's side of the change")
    ap.add_argument("--before", default="ATen's kernels", help="the reference run's side")
    ap.add_argument(
        "--reference-note",
        default=", where every cell agreed to rounding",
        help="what is known of the reference run (appended after 'the same host')",
    )
    args = ap.parse_args()
    record = json.loads(args.reference.read_text())
    meta = json.loads((args.run / "benchmarks" / "default_run.json").read_text())
    out = {
        "run": str(args.run),
        "reference": record["run"],
        # the run's own record (its clone's benchmarks/default_run.json): commit, host
        "reference_new": {k: meta.get(k) for k in ("commit", "date", "cpu", "cpu_kernels")},
        "seed_sds": reference.SEED_SDS,
        "change": args.change,
        "after": args.after,
        "before": args.before,
        "reference_note": args.reference_note,
    } | sort_misses(args.run, record)
    for name, t in sorted(out["tables"].items()):
        p = t.get("per_seed")
        seeds = (
            f"per seed: {p['beyond']} of {p['values']} beyond 3 sd (noise alone: "
            f"{p['expected_beyond_share']:.0%}), cell means {len(p['mean_misses'])} of "
            f"{p['cells']} beyond, largest {p['largest_mean_over_sd']:.2f} sd"
            if p
            else ""
        )
        print(
            f"{name:28s} seed-sd misses {t['seed_sd_misses']:3d}  no noise estimate "
            f"{t['unjudged']:4d}"
            + (f" (median rel {t['unjudged_relative_median']:.2g})" if t["unjudged"] else "")
            + ("  " + seeds if seeds else "")
        )
    print(f"{out['flagged']} of {out['cells']} cells flagged; {len(out['text'])} text or missing")
    print(f"beyond their seed noise: {len(out['seed_noise_misses'])}")
    print(f"text changed beyond its numbers: {len(out['readings'])}")
    for m in out["readings"]:
        print(
            f"  {m['table']} {m.get('column')} {m.get('row')}: {m.get('reference')!r} -> "
            f"{m.get('ours')!r}"
        )
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
