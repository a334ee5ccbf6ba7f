"""Experiment R at budget B and 2B (issue 26): does any number the verdicts read move when both step
budgets double?

Runs the digits rules of the workflow (only up to ``digits_verdicts.csv``) twice, each in its own
temporary directory, one run after the other: once on the default config (budget B:
``digits.steps``, a grouping's own ``steps``, ``digits.halves_steps``) and once with all doubled
(2B), everything else equal.
Then it prints and records

* per grouping and cell (pairing, D): the witness at B and 2B (held-out excess, pairing K<k>; MI
  bound, halves), mean ± sd over seeds; the paired difference 2B − B (the same seeds: the same
  initialisation and pairs) with its Student-t interval at the tiers' seed level; whether the
  seeds resolve it (the interval excludes 0), whether it is within the tiers' relative tolerance
  of the value at B, and whether 2B *moves* the cell (the whole interval beyond that tolerance);
* both verdict tables (the saturation rule's, the pre-registered elbow rule's and the convergence
  that gates them) and the convergence per cell;
* the job time of every digits rule at B and 2B (snakemake's benchmark files) and their ratio.

Not a timed test: it prints, and writes the record (``--out``, default
``benchmarks/digits_budget.json``) with the commit it measured, so that the docs cite a generated
record (README block ``bench_digits_budget``).

    nice -n 5 python3 benchmarks/digits_budget.py [--cores 2] [--keep DIR] [--out FILE]
    python3 benchmarks/digits_budget.py --assess RUN_DIR   # re-assess a finished run's digits
                                                           # checkpoints with this checkout's code
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
TARGET = "results/tables/digits_verdicts.csv"
RULES = ("make_digits", "compute_digits_operator", "train_digits", "assemble_digits")
COLUMNS = ["pairing", "verdict", "verdict_excess", "verdict_variance_rank_post_hoc"]
COLUMNS += ["verdict_elbow_rule", "cells_converged", "best_checkpoint_mean", "max_drop_over_effect"]
#: what the digits rules run: their code, rules, config and schema
CODE = ("workflow", "config/*.yaml", "Snakefile")
CONV = ["pairing", "D", "best_checkpoint_mean", "best_at_end", "drop_over_effect", "converged"]


def default_digits() -> dict:
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["digits"]


def doubled(budget: dict) -> dict:
    """The 2B budget: every step count doubled, a grouping's own ``steps`` included, and the
    checkpoints too, so that the 2B run's checkpoint grid holds B's (the same steps apart): under
    the constant rate its first B steps are the B run, checkpoints included, and early stopping
    at 2B can only find the same point or a lower one later."""
    groupings = [
        g | ({"steps": 2 * g["steps"]} if "steps" in g else {}) for g in budget["groupings"]
    ]
    return {
        "steps": 2 * budget["steps"],
        "halves_steps": 2 * budget["halves_steps"],
        "checkpoints": 2 * budget["checkpoints"],
        "groupings": groupings,
    }


def run_digits(workdir: Path, budget: dict, cores: int) -> None:
    (workdir / "budget.yaml").write_text(yaml.safe_dump({"digits": budget}))
    cmd = ["snakemake", "-s", str(ROOT / "Snakefile"), "--directory"]  # niced as this script
    cmd += [str(workdir), "--cores", str(cores), TARGET, "--configfile", "budget.yaml"]
    cmd += ["--forcerun", "assemble_digits"]  # a kept folder's tables: this checkout's analysis
    subprocess.run(cmd, check=True, cwd=workdir, stdin=subprocess.DEVNULL)


def witness(pairing: str) -> str:
    """The number a pairing's saturation verdict reads: held-out excess, or the halves' MI bound."""
    return "mi_bound" if pairing == "halves" else "heldout_excess"


def compare_cells(runs_b: pd.DataFrame, runs_2b: pd.DataFrame) -> pd.DataFrame:
    """Per (pairing, D): the witness at B and 2B and the paired difference 2B − B over seeds, its
    t-interval at the tiers' seed level, and whether it is resolved, within the tiers' relative
    tolerance of the value at B, and whether 2B moves the cell (the interval beyond it)."""
    from crl_approx.numerics.tiers import CLOSE_TOLERANCE, SEED_LEVEL, seed_half_width

    rows = []
    for (pairing, d), b in runs_b.groupby(["pairing", "D"], sort=False):
        col = witness(pairing)
        two = runs_2b[(runs_2b["pairing"] == pairing) & (runs_2b["D"] == d)]
        pair = (
            b.set_index("seed")[col]
            .to_frame("b")
            .join(two.set_index("seed")[col].rename("b2"), how="inner")
        )
        diff = pair["b2"] - pair["b"]
        mean, n = float(diff.mean()), len(diff)
        half = seed_half_width(float(diff.std(ddof=1)), n, SEED_LEVEL) if n > 1 else np.nan
        tol = CLOSE_TOLERANCE * abs(float(pair["b"].mean()))
        lo, hi = mean - half, mean + half
        rows.append(
            {
                "pairing": pairing,
                "K": int(b["K"].iloc[0]),
                "D": int(d),
                "witness": col,
                "seeds": n,
                "mean_B": float(pair["b"].mean()),
                "sd_B": float(pair["b"].std(ddof=1)),
                "mean_2B": float(pair["b2"].mean()),
                "sd_2B": float(pair["b2"].std(ddof=1)),
                "diff_mean": mean,
                "diff_lo": lo,
                "diff_hi": hi,
                "resolved": bool(lo > 0 or hi < 0),
                "tolerance": tol,
                "within_tolerance": bool(abs(mean) <= tol),
                "moved": bool(lo > tol or hi < -tol),
            }
        )
    return pd.DataFrame(rows)


def assess(run_dir: Path, out_dir: Path, steps=None, pairings=None) -> pd.DataFrame:
    """Rule assemble_digits' analysis on ``run_dir``'s finished digits runs (only ``pairings``
    if given), with this checkout's code, writing its tables under ``out_dir`` (the run itself is
    only read)."""
    from crl_approx.analyses import digits_tables

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    digits = config["digits"] | ({"steps": steps} if steps else {})
    enc = [
        p
        for p in sorted((run_dir / "results" / "digits" / "encoders").glob("*/dim~*/seed~*"))
        if (p / "checkpoints.npz").exists() and (pairings is None or p.parts[-3] in pairings)
    ]
    inputs = SimpleNamespace(
        images=run_dir / "results" / "digits" / "images.npz",
        classes=run_dir / "results" / "tables" / "digits_class_operator.csv",
        metrics=[str(p / "metrics.json") for p in enc],
        checkpoints=[str(p / "checkpoints.npz") for p in enc],
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    names = ("runs", "sweep", "elbow", "verdicts", "table1", "curves", "convergence")
    names += ("singular_values", "cancorr")
    output = SimpleNamespace(**{n: str(out_dir / f"digits_{n}.csv") for n in names})
    output.examples = str(out_dir / "examples.npz")
    return digits_tables.run_assemble(inputs, digits, config["tau"], output)


def job_times(run_dir: Path) -> dict:
    """Per rule: jobs and job time (the sum of the benchmark files' ``s``)."""
    from crl_approx.render.runrecord import job_times as read

    times = read(run_dir / "benchmarks")
    return {r: {"jobs": times[r]["jobs"], "job_s": times[r]["job_s"]} for r in RULES if r in times}


def show(title: str, verdicts: pd.DataFrame, tables: Path) -> None:
    print(f"\n== {title}")
    print(verdicts[[c for c in COLUMNS if c in verdicts]].to_string(index=False))
    elbow = pd.read_csv(tables / "digits_elbow.csv")
    print(
        elbow[["pairing", "curve", "elbow_D", "saturation", "in_prediction"]].to_string(index=False)
    )
    print(pd.read_csv(tables / "digits_convergence.csv")[CONV].to_string(index=False))


def show_cells(cells: pd.DataFrame) -> None:
    print("\n== per cell: witness at B and 2B (mean ± sd over seeds), paired 2B − B [t-interval]")
    for r in cells.itertuples():
        flag = "MOVED" if r.moved else ("resolved" if r.resolved else "not resolved")
        tol = "within" if r.within_tolerance else "beyond"
        conv = getattr(r, "best_at_end_B", "?"), getattr(r, "best_at_end_2B", "?")
        print(
            f"{r.pairing:>6} D={r.D:<3} {r.witness:<15} B {r.mean_B:.4g} ± {r.sd_B:.2g}   "
            f"2B {r.mean_2B:.4g} ± {r.sd_2B:.2g}   Δ {r.diff_mean:+.3g} "
            f"[{r.diff_lo:+.3g}, {r.diff_hi:+.3g}]  {flag}; {tol} 10 % ({r.tolerance:.2g}); "
            f"best checkpoint at the end in {conv[0]} (B), {conv[1]} (2B)"
        )


def commit(code=CODE, root=ROOT) -> dict:
    """The checkout's commit, the last commit that changed ``code`` (paths), and whether ``code``
    has uncommitted changes."""

    def git(*a):
        return subprocess.run(["git", *a], cwd=root, capture_output=True, text=True).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        # the last commit that changed what the rules run (code, rules, config, schema)
        "code_commit": git("log", "-1", "--format=%H", "--", *code),
        "dirty": bool(git("status", "--porcelain", "--", *code)),
    }


def budget_run(base: Path, name: str, budget: dict, cores: int) -> dict:
    run_dir = base / name
    run_dir.mkdir(parents=True, exist_ok=True)
    started = run_dir / "load_start"  # kept: a rerun on a finished folder (--keep) reuses its jobs
    if not started.exists():
        started.write_text(str(os.getloadavg()[0]))
    load = float(started.read_text())
    run_digits(run_dir, budget, cores)
    tables = run_dir / "results" / "tables"
    verdicts = pd.read_csv(tables / "digits_verdicts.csv")
    show(f"{name}: digits budget {budget}", verdicts, tables)
    return {
        "budget": budget,
        "load_average_start": load,
        "load_average_end": os.getloadavg()[0],
        "job_times": job_times(run_dir),
        "verdicts": verdicts.to_dict("records"),
        "saturation": pd.read_csv(tables / "digits_elbow.csv").to_dict("records"),
        "convergence": pd.read_csv(tables / "digits_convergence.csv")[CONV].to_dict("records"),
        "runs": pd.read_csv(run_dir / "results" / "digits" / "runs.csv"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="run here instead of a temp folder")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "digits_budget.json")
    ap.add_argument("--note", default="", help="how the machine was shared, kept in the record")
    ap.add_argument("--assess", type=Path, default=None)
    ap.add_argument("--pairings", nargs="*", default=None, help="with --assess: only these")
    args = ap.parse_args()
    if args.assess:
        with tempfile.TemporaryDirectory() as tmp:
            verdicts = assess(args.assess, Path(tmp), pairings=args.pairings)
            show(str(args.assess), verdicts, Path(tmp))
        return
    digits = default_digits()
    b = {k: digits[k] for k in ("steps", "halves_steps", "checkpoints", "groupings")}
    base = args.keep or Path(tempfile.mkdtemp(prefix="digits_budget_"))
    record = commit() | {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python3", "benchmarks/digits_budget.py", *sys.argv[1:]]),
        "cores": args.cores,
        "cpu_count": os.cpu_count(),
        "note": args.note,
        "protocol": {k: digits[k] for k in ("lr", "halves_lr", "schedule", "batch_size")}
        | {"checkpoints": digits["checkpoints"], "groupings": digits["groupings"]}
        | {"halves_dims": digits["halves_dims"]},
    }
    runs = {
        name: budget_run(base, name, bud, args.cores)
        for name, bud in (("B", b), ("2B", doubled(b)))
    }
    cells = compare_cells(runs["B"].pop("runs"), runs["2B"].pop("runs"))
    for name, r in runs.items():  # the gate's reading of each cell at B and at 2B
        conv = pd.DataFrame(r["convergence"])[["pairing", "D", "best_at_end", "converged"]]
        cells = cells.merge(
            conv.add_suffix(f"_{name}").rename(
                columns={f"pairing_{name}": "pairing", f"D_{name}": "D"}
            ),
            on=["pairing", "D"],
        )
    show_cells(cells)
    for name, r in runs.items():
        jt = r["job_times"]
        print(
            f"{name}: job time {sum(v['job_s'] for v in jt.values()):.0f} s; "
            + ", ".join(f"{k} {v['jobs']} job(s) {v['job_s']:.0f} s" for k, v in jt.items())
            + f" (load average {r['load_average_start']:.1f} → {r['load_average_end']:.1f})"
        )
    record |= {"runs": runs, "cells": cells.to_dict("records")}
    args.out.write_text(json.dumps(record, indent=1, allow_nan=True) + "\n")
    print(f"record: {args.out}")


if __name__ == "__main__":
    main()
