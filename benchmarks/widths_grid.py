"""Experiment W on a denser grid than the default run's (issue 29): what the default grid cannot
resolve.

The default grid (``widths.grid`` of config/config.yaml) is the one that fits issue 29's budget of
~300 s of added job time on 2 cores: one narrower width per tower and world, no data check. This
script runs the workflow's Experiment W rules (up to ``widths_verdicts.csv``) with the grid and
data check below, everything else the default config, and records every table the assembly
writes, so that docs/widths.md can cite a generated record (block ``bench_widths_grid``). The
grid was chosen and committed with this script before it ran (issue 29: widths below 8, where the
excess is not yet estimation error, and the data check).

The run folder (``--dir``) may be a finished default run: its cells are reused, Snakemake
trains only the new ones (every cell's job depends only on its own world, tower, width and
data). Its ``results/tables/widths*.csv`` are then this grid's, not the default run's.

Not a timed test: it prints, and writes the record (``--out``, default
``benchmarks/widths_grid.json``) with the commit it measured.

    nice -n 5 python3 benchmarks/widths_grid.py --dir RUN_DIR [--cores 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from digits_budget import commit  # noqa: E402 (the record's commit fields, shared)

#: the denser grid: widths below 8 on the LCGM (the default run's excess at 8 was already close to
#: its excess at train.width), and every doubling up to train.width; on the mixture 4 and 8 below
#: W3's 32
GRID = {"lcgm": [2, 4, 8, 16, 32, 64], "gmm": [4, 8, 32]}
TABLES = {k: f"widths{k}" for k in ("", "_eps", "_fits", "_verdicts")}
#: what the width rules run: their code, rules, config and schema
CODE = ("workflow", "config/config.yaml", "Snakefile")


def run_grid(workdir: Path, cores: int) -> None:
    override = {"widths": {"grid": GRID, "data_check": True}}
    (workdir / "widths_grid.yaml").write_text(yaml.safe_dump(override))
    cmd = ["snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    cmd += ["--cores", str(cores), "results/tables/widths_verdicts.csv"]
    cmd += ["--configfile", "widths_grid.yaml", "--forcerun", "assemble_widths"]
    subprocess.run(cmd, check=True, cwd=workdir, stdin=subprocess.DEVNULL)


def job_times(run_dir: Path, started: float) -> dict:
    """Per train_widths job (world/tower/width/data): its job time (Snakemake's ``s``, read by
    :func:`crl_approx.render.runrecord.job_times`) and whether this run trained it (its benchmark
    file written after ``started``) or reused it."""
    from crl_approx.render.runrecord import job_times as read

    bench = run_dir / "benchmarks"
    per = read(bench)["train_widths"]["per_job"]  # "train_widths/gmm/tower~f/width~4/data~1x"

    def order(job: str):  # world, tower, width as a number, data
        _, world, tower, width, data = job.split("/")
        return world, tower, int(width.split("~")[1]), data

    return {
        job.split("/", 1)[1]: {
            "s": s,
            "trained_here": (bench / f"{job}.tsv").stat().st_mtime >= started,
        }
        for job, s in sorted(per.items(), key=lambda kv: order(kv[0]))
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None, help="run folder (default: a temp folder)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "widths_grid.json")
    ap.add_argument("--note", default="", help="how the machine was shared, kept in the record")
    args = ap.parse_args()
    run_dir = args.dir or Path(tempfile.mkdtemp(prefix="widths_grid_"))
    run_dir.mkdir(parents=True, exist_ok=True)
    stamp = run_dir / "widths_grid_started.json"  # kept: a rerun on the folder (an analysis
    if not stamp.exists():  # change) still tells the cells its first run trained
        stamp.write_text(json.dumps({"time": time.time(), "load": os.getloadavg()[0]}))
    first = json.loads(stamp.read_text())
    started, load = first["time"], first["load"]
    cores = first.setdefault("cores", args.cores)  # the cores its training ran on
    stamp.write_text(json.dumps(first))
    run_grid(run_dir, args.cores)
    tables = run_dir / "results" / "tables"
    record = commit(CODE) | {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python3", "benchmarks/widths_grid.py", *sys.argv[1:]]),
        "cores": cores,
        "cpu_count": os.cpu_count(),
        "note": args.note,
        "grid": GRID,
        "data_check": True,
        "load_average_start": load,
        "load_average_end": os.getloadavg()[0],
        "job_times": job_times(run_dir, started),
        "tables": {
            key: pd.read_csv(tables / f"{name}.csv").to_dict("records")
            for key, name in TABLES.items()
        },
    }
    for name in TABLES.values():
        print(f"\n== {name}")
        print(pd.read_csv(tables / f"{name}.csv").to_string(index=False))
    args.out.write_text(json.dumps(record, indent=1, allow_nan=True) + "\n")
    print(f"record: {args.out}")


if __name__ == "__main__":
    main()
