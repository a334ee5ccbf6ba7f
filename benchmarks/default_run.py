"""The full default run's wall time from a clean clone: a product number, measured, not typed.

Clones the repository's committed HEAD into a fresh folder, runs ``snakemake --cores all`` there on
the default config (nothing else should run on the machine meanwhile), and writes a record:
the commit, the machine, the wall time, the host's load average before and after, the number of
jobs, and per rule the jobs, the job time (the sum of Snakemake's benchmark ``s`` column), the
jobs' own CPU time (each job's log ends with it: crl_approx.runtime) and the longest job. The
training jobs build the compiled step (crl_approx.training.native) into a cache folder of the
clone's own (``CRL_NATIVE_DIR``), so the run pays its build as a new machine does; the record says
which step the jobs ran and what the build cost. The README's timing sentences are generated from
this record (``python3 -m crl_approx.render.readme``), and
the clone is kept so its ``results/`` can serve as ``CRL_DEFAULT_RUN`` for the default-tier tests.

    python3 benchmarks/default_run.py [--dest /tmp/crl-default-run]
                                      [--out benchmarks/default_run.json]

With ``--configfile config/smoke.yaml --out benchmarks/smoke_run.json --dest /tmp/crl-smoke-run``
the same for the smoke configuration (README's smoke time is generated from that record); with
``--target paper --out benchmarks/paper_run.json --dest /tmp/crl-paper-run`` the paper's own tables
and figures only (README's time for ``snakemake --cores all paper``). The record also says how full
the run kept its cores (``occupancy``, from Snakemake's log: crl_approx.render.runrecord.occupancy);
``--amend`` re-derives that from the run kept at ``--dest`` into the record at ``--out``, if the
record is that run's (the same commit), without running anything.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from crl_approx.render.html import cpu_name  # noqa: E402
from crl_approx.render.reference import cpu_kernels  # noqa: E402
from crl_approx.render.runrecord import job_times, occupancy  # noqa: E402
from crl_approx.runtime import children_cpu  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, default=Path("/tmp/crl-default-run"))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "default_run.json")
    ap.add_argument("--configfile", help="a configfile on top of config/config.yaml")
    ap.add_argument("--target", help="a target rule (e.g. paper) instead of the default, all")
    ap.add_argument("--amend", action="store_true", help="re-derive the log's fields, run nothing")
    args = ap.parse_args()
    if args.amend:
        amend(args.dest, args.out)
        return
    command = ["snakemake", "--cores", "all"] + ([args.target] if args.target else [])
    command += ["--configfile", args.configfile] if args.configfile else []

    if args.dest.exists():
        shutil.rmtree(args.dest)
    subprocess.run(["git", "clone", "-q", str(REPO), str(args.dest)], check=True)
    commit = head_commit(args.dest)
    log = args.dest / "default_run.log"
    # the compiled step's build, paid inside the run as on a new machine (not this host's cache)
    native_dir = args.dest / ".native-cache"
    load_start = os.getloadavg()
    tree_start = children_cpu()
    start = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.run(
            command,
            cwd=args.dest,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "MPLBACKEND": "Agg", "CRL_NATIVE_DIR": str(native_dir)},
        )
    wall = time.monotonic() - start
    tree = children_cpu() - tree_start
    load_end = os.getloadavg()
    if proc.returncode != 0:
        sys.exit(f"snakemake failed (exit {proc.returncode}); see {log}")
    steps = re.findall(r"(\d+) of (\d+) steps \(100%\) done", log.read_text())
    record = {
        "commit": commit,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "command": " ".join(command),
        "cores": os.cpu_count(),
        "cpu": cpu_name(),
        "cpu_kernels": cpu_kernels(),  # trained numbers are bitwise equal only where these match
        "python": platform.python_version(),
        "wall_s": round(wall, 1),
        "jobs": int(steps[-1][1]) if steps else None,
        # the host's 1-minute load average before and after: what ran beside the run
        "load_average_start": round(load_start[0], 2),
        "load_average_end": round(load_end[0], 2),
        "rules": job_times(args.dest / "benchmarks"),
    }
    record |= native_record(args.dest)
    record["occupancy"] = occupancy(log.read_text(), record["cores"])
    # the host's one-thread float32 matmul peak, after the run (nothing else runs): two hosts'
    # wall times differ by their speed as much as by the code
    from crl_approx.training.host import matmul_peak

    record["peak_gflops"] = round(matmul_peak() / 1e9, 1)
    record["job_cpu_s"] = round(sum(r["cpu_s"] for r in record["rules"].values()), 1)
    record["job_s"] = round(sum(r["job_s"] for r in record["rules"].values()), 1)
    # the CPU of the whole process tree (Snakemake, its solver, the jobs' shells and the jobs), and
    # what is not the jobs' own: Snakemake's scheduling, job launches and benchmark sampling
    record["tree_cpu_s"] = round(tree, 1)
    record["snakemake_cpu_s"] = round(tree - record["job_cpu_s"], 1)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "rules"}, indent=1))
    print(f"written {args.out}; run kept in {args.dest}")


def head_commit(clone: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True, text=True
    ).stdout.strip()


def amend(dest: Path, out: Path) -> None:
    """The record at ``out`` with what it reads from the log of the run kept at ``dest``
    (``occupancy``), if the record is that run's."""
    record = json.loads(out.read_text())
    commit = head_commit(dest)
    if commit != record["commit"]:
        sys.exit(f"{dest} is a run of {commit[:7]}, the record {out} of {record['commit'][:7]}")
    record["occupancy"] = occupancy((dest / "default_run.log").read_text(), record["cores"])
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["occupancy"]))


def native_record(dest: Path) -> dict:
    """Which step the training jobs ran (each logs it once: crl_approx.runtime.STEP_LINE;
    ``compiled`` if all of them ran the compiled one, else how many ran which), how many ran the
    sampled step with which kernels (KERNELS_LINE), and the build's CPU
    and wall seconds (the job that built it logs them as its ``native`` part, the compiler's
    processes included; the others load it in milliseconds of CPU, a job that waited for the
    build with a long wall time)."""
    from crl_approx.render.runrecord import job_steps
    from crl_approx.runtime import PHASE_PATTERN

    steps: dict[str, int] = {}
    kernels: dict[str, int] = {}
    build = None
    for path in sorted((dest / "logs").rglob("*.log")):
        for step in job_steps(path):
            steps[step] = steps.get(step, 0) + 1
        for name in job_steps(path, kernels=True):
            kernels[name] = kernels.get(name, 0) + 1
        text = path.read_text(errors="replace")
        for name, cpu, wall in PHASE_PATTERN.findall(text):
            if name == "native" and (build is None or float(cpu) > build["cpu_s"]):
                build = {"cpu_s": float(cpu), "wall_s": float(wall), "job": str(path.name)}
    step = "compiled" if set(steps) == {"compiled"} else steps
    # how many jobs ran the sampled inner-score step with each kernel set (train.step_kernels)
    return {"step": step, "step_kernels": kernels, "native_build": build}


if __name__ == "__main__":
    main()
