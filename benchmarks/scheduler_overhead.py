"""What Snakemake's own process costs while jobs run, by ``--max-jobs-per-timespan``, side by side.

Snakemake 9's scheduler ends every scheduling pass by starting a timer that runs one more pass
after the rate limiter's timespan (``JobScheduler._schedule_reevalutation``); every finished job
triggers a pass, so every finished job starts one more chain of timed passes: after k jobs, k
passes per timespan, each walking the ready jobs and their inputs. With the default limit
(100/1s) the scheduler's CPU grows with the square of the jobs done; with a longer timespan it is
that many times smaller, and the run ends up to one timespan after its last job (the last timer is
a thread Python waits for). profiles/default sets the timespan this measures.

The stand-in workflow: ``--jobs`` jobs that each read the same 8 small files and sleep ``--sleep``
seconds (no CPU of their own), after the 8 jobs that write those files, and one job that gathers
them, run with ``--cores 2`` in a fresh folder, once per timespan, the order alternating between
repeats. The parent reads the CPU of the whole process tree (``RUSAGE_CHILDREN``: Snakemake, its
threads and solver, the jobs' shells): almost all of it is Snakemake's. Medians of ``--repeats``.

    python3 benchmarks/scheduler_overhead.py [--jobs 150] [--sleep 2] [--repeats 1]
                                             [--out benchmarks/scheduler_overhead.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from crl_approx.render.html import cpu_name  # noqa: E402
from crl_approx.runtime import children_cpu  # noqa: E402

CORES = 2  # the default run's machine

SNAKEFILE = """
N = {jobs}
K = 8


rule all:
    input:
        expand("done/{{i}}.txt", i=range(N)),
    output:
        "all.txt",
    shell:
        "cat {{input}} > {{output}}"


rule data:
    output:
        "data/{{k}}.txt",
    shell:
        "echo {{wildcards.k}} > {{output}}"


rule one:
    input:
        expand("data/{{k}}.txt", k=range(K)),
    output:
        "done/{{i}}.txt",
    params:
        i=lambda wildcards: int(wildcards.i),
    shell:
        "sleep {sleep} && echo {{params.i}} > {{output}}"
"""


def profile_timespan() -> str:
    """The timespan profiles/default sets (max-jobs-per-timespan)."""
    profile = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    return profile["max-jobs-per-timespan"]


def one_run(jobs: int, sleep: float, limit: str) -> dict:
    """One run of the stand-in workflow under ``--max-jobs-per-timespan limit``."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Snakefile").write_text(SNAKEFILE.format(jobs=jobs, sleep=sleep))
        cmd = ["snakemake", "--cores", str(CORES), "--max-jobs-per-timespan", limit]
        cmd += ["--quiet", "all"]
        cpu, t0 = children_cpu(), time.monotonic()
        proc = subprocess.run(
            cmd, cwd=tmp, capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        wall, cpu = time.monotonic() - t0, children_cpu() - cpu
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=150)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "scheduler_overhead.json")
    args = ap.parse_args()
    limits = ["100/1s", profile_timespan()]  # Snakemake's default, ours
    runs: dict[str, list[dict]] = {limit: [] for limit in limits}
    load = os.getloadavg()[0]
    for r in range(args.repeats):
        for limit in limits if r % 2 == 0 else limits[::-1]:
            runs[limit].append(one_run(args.jobs, args.sleep, limit))
            print(limit, {k: round(v, 2) for k, v in runs[limit][-1].items()}, flush=True)
    # the jobs' own floor: N sleeps on CORES cores
    floor = args.jobs * args.sleep / CORES
    rows = []
    for limit in limits:
        wall = statistics.median(x["wall_s"] for x in runs[limit])
        cpu = statistics.median(x["cpu_s"] for x in runs[limit])
        rows.append(
            {
                "max_jobs_per_timespan": limit,
                "wall_s": round(wall, 2),
                "over_sleep_s": round(wall - floor, 2),
                "snakemake_cpu_s": round(cpu, 2),
                "runs": [{k: round(v, 2) for k, v in x.items()} for x in runs[limit]],
            }
        )
    record = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "cpu": cpu_name(),
        "snakemake": subprocess.run(
            ["snakemake", "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "cores": CORES,
        "jobs": args.jobs,
        "sleep_s": args.sleep,
        "repeats": args.repeats,
        "load_before": round(load, 2),
        "limits": rows,
        "cpu_ratio": round(rows[0]["snakemake_cpu_s"] / rows[1]["snakemake_cpu_s"], 2),
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "limits"}))


if __name__ == "__main__":
    main()
