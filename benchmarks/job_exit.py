"""What a job's process costs after its last logged line: the interpreter's teardown, with the
ordinary exit (``CRL_FULL_EXIT=1``) and with the exit every job now takes (crl_approx.runtime.
exit_now), side by side in one run.

Each case is a stand-in job in a fresh interpreter: Snakemake's own object for a script (so
``rule_logging`` takes the job's exit), the imports of one kind of job (a training job's
``crl_approx.training.cells``, which loads torch; a plot job's ``crl_approx.figures.draw``), one
small output, then the exit. The parent reads the child's whole CPU (user + system, ``os.wait4``)
and the CPU the child's log line says (``runtime.CPU_LINE``): their difference is what no job log
counts, and what the next job on the core waits for. The two exits alternate, each first in every
other repeat; medians of ``--repeats``. Nothing else should run on the host.

    python3 benchmarks/job_exit.py [--repeats 7] [--out benchmarks/job_exit.json]
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

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))

from crl_approx.render.html import cpu_name  # noqa: E402
from crl_approx.runtime import CPU_PATTERN, FULL_EXIT_ENV  # noqa: E402

#: kind of job → the module its shim imports inside its rule_logging block
KINDS = {"training": "crl_approx.training.cells", "plot": "crl_approx.figures.draw"}

CHILD = """
import importlib, sys
from snakemake import iocontainers as io
from crl_approx.runtime import atomic_path, rule_logging

log, out, module = sys.argv[1:4]
smk = io.Snakemake(
    io.InputFiles(), io.OutputFiles([out]), io.Params(), io.Wildcards(), 1,
    io.ResourceList(), io.Log([log]), {}, "stand_in", None,
)
__real_file__ = "<stand-in>"  # what Snakemake's preamble sets in the script it runs
with rule_logging(smk):
    importlib.import_module(module)
    with atomic_path(out) as tmp:
        tmp.write_text("done")
"""


def once(module: str, full_exit: bool, folder: Path) -> dict:
    log, out = folder / "job.log", folder / "out.txt"
    env = {**os.environ, "PYTHONPATH": str(SCRIPTS), "MPLBACKEND": "Agg"}
    env.pop(FULL_EXIT_ENV, None)
    if full_exit:
        env[FULL_EXIT_ENV] = "1"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log), str(out), module],
        env=env,
        stdin=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or out.read_text() != "done":
        sys.exit(f"the stand-in job for {module} failed (exit {proc.returncode}); see {log}")
    logged = float(CPU_PATTERN.search(log.read_text()).group(1))
    total = usage.ru_utime + usage.ru_stime
    after = total - logged
    return {"cpu_s": total, "logged_cpu_s": logged, "after_log_cpu_s": after, "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    runs: dict = {k: {"full": [], "fast": []} for k in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for kind, module in KINDS.items():
                # alternating, and each exit first in every other repeat: drift and order hit both
                for mode in ("full", "fast") if i % 2 == 0 else ("fast", "full"):
                    runs[kind][mode].append(once(module, mode == "full", Path(tmp)))
    cells = {}
    for kind, modes in runs.items():
        med = {
            mode: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]}
            for mode, rs in modes.items()
        }
        med["saved_cpu_s"] = round(med["full"]["cpu_s"] - med["fast"]["cpu_s"], 3)
        med["saved_wall_s"] = round(med["full"]["wall_s"] - med["fast"]["wall_s"], 3)
        cells[kind] = {"module": KINDS[kind], **med}
    record = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip(),
        "cpu": cpu_name(),
        "repeats": args.repeats,
        "load_before": round(os.getloadavg()[0], 2),
        "cells": cells,
    }
    print(json.dumps(record, indent=1))
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
