"""Experiment W at budget B and 2B (issue 36): do the LCGM verdicts survive twice the steps?

A verdict that says "fails" or "holds" must survive the obvious checks; one of them is that a
doubled budget agrees. This copies a finished default run (``--run``: its results and Snakemake's
records, so nothing else reruns) and reruns there what ``widths.lcgm_steps`` feeds — every LCGM
cell of Experiment W (the widest cell's 2× check follows the steps) and the assembly — with the
steps doubled, everything else equal (the same seeds: the same initialisation and streams). The
mixture's cells do not read the steps and are reused. Then it prints and records

* per world: the floor, the widest cell's 2× drop and the smallest ε read, at B and at 2B;
* per LCGM world, tower and ε: the width needed (seeds' geometric mean and the seeds' range) at
  B and at 2B;
* the dimension sweep's growth factors (W5, W6) with their intervals, at B and at 2B;
* every verdict at B and at 2B, and whether each decided verdict agrees;
* the job CPU time of the 2B cells (their logs), beside B's.

Not a timed test: it prints, and writes the record (``--out``, default
``benchmarks/widths_budget.json``) with the commit it measured; the closing note of issue 36 and
docs/widths.md cite it.

    python3 benchmarks/default_run.py                 # B: the default run, kept in /tmp
    python3 benchmarks/widths_budget.py [--run /tmp/crl-default-run] [--cores 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
TARGET = "results/tables/widths_verdicts.csv"
#: the verdicts the LCGM's steps can move (W3, W7 read the mixture, which is not rerun)
LCGM_PREDICTIONS = ("W1", "W2", "W4", "W5", "W6")


def tables(run: Path) -> dict:
    t = run / "results" / "tables"
    return {n: pd.read_csv(t / f"widths_{n}.csv") for n in ("eps", "dims", "floors", "verdicts")}


def rerun_doubled(run: Path, work: Path, cores: int) -> int:
    """Copy ``run`` to ``work`` and rerun W's LCGM cells there at twice widths.lcgm_steps."""
    shutil.copytree(run, work, symlinks=True)
    steps = yaml.safe_load((work / "config" / "config.yaml").read_text())["widths"]["lcgm_steps"]
    (work / "budget.yaml").write_text(yaml.safe_dump({"widths": {"lcgm_steps": 2 * steps}}))
    cmd = ["snakemake", "--cores", str(cores), TARGET, "--configfile", "budget.yaml"]
    subprocess.run(cmd, check=True, cwd=work, stdin=subprocess.DEVNULL)
    return steps


def widths_table(b: pd.DataFrame, b2: pd.DataFrame) -> pd.DataFrame:
    """The LCGM worlds' width needed per (world, tower, ε) at B and 2B (read levels only)."""
    key = ["world", "tower", "eps"]
    cols = [*key, "width", "seed_lo", "seed_hi", "status"]
    b, b2 = (t[t["world"].str.startswith("lcgm")][cols] for t in (b, b2))
    both = b.merge(b2, on=key, how="outer", suffixes=("_B", "_2B"))
    return both[both[["status_B", "status_2B"]].notna().any(axis=1)]


def job_cpu(run: Path, since: float) -> dict:
    """CPU seconds of the LCGM's W training jobs (the towers' sweeps, the widest cells) whose log
    was written after ``since`` (the 2B run), and of every W training job of the run (the
    mixture's sweeps too: ``all_train_widths_cpu_s``, the one rule's total before 1.12.0)."""
    from crl_approx.render.runrecord import job_cpu as log_cpu
    from crl_approx.render.runrecord import job_times

    rules = ("train_widths", "train_widths_widest")
    logs = [
        p for r in rules for p in (run / "logs" / r).rglob("*.log") if p.stat().st_mtime > since
    ]
    cpu = [c[0] for c in map(log_cpu, logs) if c is not None]
    rec = job_times(run / "benchmarks")
    every = (*rules, "train_widths_gmm")
    total = sum(rec.get(r, {}).get("cpu_s") or 0.0 for r in every)
    return {"jobs": len(cpu), "cpu_s": sum(cpu), "all_train_widths_cpu_s": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=Path("/tmp/crl-default-run"))
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="the 2B run's folder (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "widths_budget.json")
    args = ap.parse_args()

    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="crl-w2b-")
    work = args.keep or Path(tmp.name) / "run"
    if work.exists():
        shutil.rmtree(work)
    started = dt.datetime.now().timestamp()
    steps = rerun_doubled(args.run, work, args.cores)
    b, b2 = tables(args.run), tables(work)

    floors = b["floors"].merge(b2["floors"], on="world", suffixes=("_B", "_2B"))
    floor_cols = ["world"] + [f"{c}_{s}" for c in ("floor", "read_limit") for s in ("B", "2B")]
    wt = widths_table(b["eps"], b2["eps"])
    dims = b["dims"].merge(b2["dims"], on=["world", "tower"], suffixes=("_B", "_2B"))
    dim_cols = ["world", "tower"] + [
        f"{c}_{s}" for s in ("B", "2B") for c in ("ratio", "ratio_lo", "ratio_hi", "reading")
    ]
    v = b["verdicts"].merge(b2["verdicts"], on=["prediction", "world"], suffixes=("_B", "_2B"))
    v["decided_B"] = v["verdict_B"].isin(["holds", "fails"])
    v["agrees"] = v["verdict_B"] == v["verdict_2B"]
    cost = job_cpu(work, started)

    pd.set_option("display.width", 200)
    print(f"\n== floors and smallest ε read: B = {steps} steps, 2B = {2 * steps}")
    print(floors[floor_cols].to_string(index=False))
    print("\n== width needed per ε (seeds' geometric mean [seed range])")
    print(wt.to_string(index=False))
    print("\n== dimension sweep: growth factor of the needed width, d0 → d [interval]")
    print(dims[dim_cols].to_string(index=False))
    print("\n== verdicts")
    print(v[["prediction", "verdict_B", "verdict_2B", "agrees"]].to_string(index=False))
    print(f"\n== 2B cells: {cost['jobs']} jobs, {cost['cpu_s']:.0f} s of job CPU")

    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=args.run, capture_output=True, text=True
    ).stdout.strip()
    record = {
        "commit": head,
        "date": dt.date.today().isoformat(),
        "steps_B": steps,
        "steps_2B": 2 * steps,
        "floors": floors[floor_cols].to_dict("records"),
        "widths": wt.to_dict("records"),
        "dims": dims[dim_cols].to_dict("records"),
        "verdicts": v[["prediction", "verdict_B", "verdict_2B", "agrees"]].to_dict("records"),
        "lcgm_decided_agree": bool(
            v.loc[v["prediction"].isin(LCGM_PREDICTIONS) & v["decided_B"], "agrees"].all()
        ),
        "cost_2B": cost,
    }
    args.out.write_text(json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {args.out}")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
