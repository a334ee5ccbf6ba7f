"""The jobs' allocator setting (crl_approx.runtime.configure_allocator) on the numerical jobs, side
by side in one run: Experiment S's floor (rule compute_smoothness_floor) and its spectrum (rule
compute_smoothness), each computed in a fresh interpreter (mallopt is per process) with glibc's
default allocator (CRL_DEFAULT_ALLOCATOR=1), with the setting of the jobs before 1.20.0
(CRL_PREVIOUS_ALLOCATOR=1) and with the setting every job makes now, alternating (each order in
turn), one thread, the default config's settings (the floor at ``--dims``, the spectrum at
``--beta``).

Prints per cell and mode the child's CPU seconds (user and system, getrusage), its minor page
faults, its peak resident memory, the CPU ratios default / setting and previous / setting, and
whether every table (the spectrum's four) is bitwise equal in every mode (it must be: exit 1
otherwise). Nothing else should run on the host.

    python3 benchmarks/allocator.py [--beta 0.5] [--dims 1,2] [--repeats 2]
                                    [--out benchmarks/allocator.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
CELLS = ("smoothness_floor", "smoothness_spectrum")
#: the jobs' setting before 1.20.0 (mallopt: every block up to 32 MiB from the heap, kept), the
#: ``previous`` mode: what the current setting changed
PREVIOUS = {-3: 32 << 20, -1: 1 << 30, -2: 64 << 20}


def child(cell: str, beta: float, dims: list[int], overrides: dict) -> dict:
    """One cell in this interpreter; the allocator is set here unless CRL_DEFAULT_ALLOCATOR=1."""
    import resource

    sys.path.insert(0, str(SCRIPTS))
    import yaml

    from crl_approx import runtime

    if os.environ.get("CRL_PREVIOUS_ALLOCATOR") == "1":
        runtime.ALLOCATOR = PREVIOUS
    if not runtime.use_job_allocator():
        assert os.environ.get("CRL_DEFAULT_ALLOCATOR") == "1", "mallopt did not take"
    from crl_approx.numerics import smoothness

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    smooth = {**config["smoothness"], "dims": dims, **overrides}
    before = resource.getrusage(resource.RUSAGE_SELF)
    scale = smoothness.solve_scale(beta, smooth["mutual_information"])
    if cell == "smoothness_floor":
        table = smoothness.floor_curve(beta, scale, smooth, config["tau"])
        tables = [table.drop(columns=["seconds"])]  # a wall time, not a number of the model
    else:
        world = smoothness.world_tables(beta, scale, smooth, config["tau"])
        # every table the job writes (smoothness.run_world)
        tables = [world[k] for k in ("world", "eigenvalues", "excess", "eps")]
    after = resource.getrusage(resource.RUSAGE_SELF)
    digest = hashlib.sha256()
    for t in tables:
        digest.update(t.to_csv(index=False, float_format="%.17g").encode())
    digest = digest.hexdigest()
    return {
        "user_s": after.ru_utime - before.ru_utime,
        "sys_s": after.ru_stime - before.ru_stime,
        "faults": after.ru_minflt - before.ru_minflt,
        "max_rss_mib": after.ru_maxrss / 1024,  # the process's peak resident memory
        "table_sha256": digest,
    }


def run_child(cell: str, mode: str, beta: float, dims: list[int], overrides: dict) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["CRL_DEFAULT_ALLOCATOR"] = "1" if mode == "default" else "0"
    env["CRL_PREVIOUS_ALLOCATOR"] = "1" if mode == "previous" else "0"
    env.update(MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    args = [sys.executable, __file__, "--child", cell, "--beta", str(beta)]
    args += ["--dims", ",".join(map(str, dims)), "--overrides", json.dumps(overrides)]
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beta", type=float, default=0.5)
    ap.add_argument("--dims", default="1,2")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--overrides", default="{}", help="smoothness keys over the config's (JSON)")
    ap.add_argument("--child", choices=CELLS)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    dims, overrides = [int(d) for d in a.dims.split(",")], json.loads(a.overrides)
    if a.child:
        print(json.dumps(child(a.child, a.beta, dims, overrides)))
        return 0
    record = {
        "what": "each cell computed in a fresh interpreter, glibc's default allocator against "
        "the jobs' setting, alternating; CPU = user + system of the child",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
        ).stdout.strip(),
        "load_at_start": os.getloadavg()[0],
        "beta": a.beta,
        "dims": dims,
        "repeats": a.repeats,
        "overrides": overrides,
        "cells": {},
    }
    failed = False
    for cell in a.cells.split(","):
        runs = {"default": [], "previous": [], "setting": []}
        for i in range(a.repeats):
            for mode in list(runs)[:: 1 if i % 2 == 0 else -1]:  # each order in turn
                runs[mode].append(run_child(cell, mode, a.beta, dims, overrides))
        row = {}
        for mode, rs in runs.items():
            row[mode] = {
                "cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in rs),
                "sys_s": statistics.median(r["sys_s"] for r in rs),
                "faults": statistics.median(r["faults"] for r in rs),
                "max_rss_mib": statistics.median(r["max_rss_mib"] for r in rs),
            }
        shas = {r["table_sha256"] for rs in runs.values() for r in rs}
        row["bitwise_equal"] = len(shas) == 1
        row["cpu_ratio"] = row["default"]["cpu_s"] / row["setting"]["cpu_s"]
        row["previous_ratio"] = row["previous"]["cpu_s"] / row["setting"]["cpu_s"]
        failed |= not row["bitwise_equal"]
        record["cells"][cell] = row
        d, s = row["default"], row["setting"]
        print(
            f"{cell:22s} default {d['cpu_s']:7.1f} s CPU ({d['sys_s']:5.1f} sys, "
            f"{d['faults']:>9.0f} faults)  setting {s['cpu_s']:7.1f} s ({s['sys_s']:5.1f} sys, "
            f"{s['faults']:>7.0f} faults)  ratio {row['cpu_ratio']:.2f} "
            f"(previous setting {row['previous_ratio']:.2f})  "
            f"bitwise equal: {row['bitwise_equal']}"
        )
    record["load_at_end"] = os.getloadavg()[0]
    if a.out:
        a.out.write_text(json.dumps(record, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
