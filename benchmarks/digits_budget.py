"""Experiment R at budget B and 2B (issue 26): do its verdicts agree when the step budget doubles?

Runs the digits rules of the workflow (only the digits outputs) with ``digits.steps`` = B and 2B,
each in its own temporary directory, one run at a time, then prints both verdict tables (the
saturation rule's, the pre-registered elbow rule's, and the convergence that gates them) and the
job time of train_digits from the snakemake benchmark files. Not a timed test: it prints.

    python3 benchmarks/digits_budget.py [B] [--cores 2] [--keep DIR]
    python3 benchmarks/digits_budget.py --assess RUN_DIR   # re-assess a finished run's digits
                                                           # checkpoints with this checkout's code
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
TARGET = "results/tables/digits_verdicts.csv"
COLUMNS = ["pairing", "verdict", "verdict_excess", "verdict_variance_rank_post_hoc"]
COLUMNS += ["verdict_elbow_rule", "cells_converged", "best_checkpoint_mean", "max_drop_over_effect"]


def run_digits(workdir: Path, steps: int, cores: int) -> None:
    (workdir / "budget.yaml").write_text(yaml.safe_dump({"digits": {"steps": steps}}))
    cmd = ["nice", "-n", "5", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory"]
    cmd += [str(workdir), "--cores", str(cores), TARGET, "--configfile", "budget.yaml"]
    subprocess.run(cmd, check=True, cwd=workdir)


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


def job_seconds(run_dir: Path) -> float:
    files = (run_dir / "benchmarks" / "train_digits").glob("*/*.tsv")
    return sum(float(pd.read_csv(f, sep="\t")["s"].iloc[-1]) for f in files)


def show(title: str, verdicts: pd.DataFrame, out_dir: Path) -> None:
    print(f"\n== {title}")
    print(verdicts[[c for c in COLUMNS if c in verdicts]].to_string(index=False))
    elbow = pd.read_csv(out_dir / "digits_elbow.csv")
    cols = ["pairing", "curve", "elbow_D", "saturation", "in_prediction"]
    print(elbow[cols].to_string(index=False))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("budget", nargs="?", type=int, default=None)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--assess", type=Path, default=None)
    ap.add_argument("--pairings", nargs="*", default=None, help="with --assess: only these")
    args = ap.parse_args()
    if args.assess:
        with tempfile.TemporaryDirectory() as tmp:
            verdicts = assess(args.assess, Path(tmp), pairings=args.pairings)
            show(str(args.assess), verdicts, Path(tmp))
        return
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    b = args.budget or config["digits"]["steps"]
    base = args.keep or Path(tempfile.mkdtemp(prefix="digits_budget_"))
    times = {}
    for steps in (b, 2 * b):
        run_dir = base / f"steps{steps}"
        run_dir.mkdir(parents=True, exist_ok=True)
        run_digits(run_dir, steps, args.cores)
        times[steps] = job_seconds(run_dir)
        show(
            f"digits.steps = {steps}", pd.read_csv(run_dir / TARGET), run_dir / "results" / "tables"
        )
    for steps, s in times.items():
        print(f"train_digits job time at {steps} steps: {s:.0f} s (21 jobs, benchmark files)")


if __name__ == "__main__":
    main()
