"""Experiment S's spectrum job (rule compute_smoothness: a world's two spectra, decay fit, excess
curve and D(ε)) at two versions of the code, side by side in one run: ``--before`` (a git ref,
checked out into a temporary worktree) and this working tree, each in a fresh interpreter,
alternating, one thread, the jobs' allocator setting in both.

Prints per world β the child's CPU seconds (user + system, median over ``--repeats``), the ratio
before / after, the child's peak resident memory, and whether the four tables the job writes are
bitwise the same (they must be: exit 1 otherwise). Nothing else should run on the host.

    python3 benchmarks/spectrum_speed.py --before HEAD [--betas 0.5,2] [--repeats 2]
                                         [--out benchmarks/spectrum_speed.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import statistics
import sys
from pathlib import Path

from floor_speed import REPO, checkout, child_json, finish, git

TABLES = ("world", "eigenvalues", "excess", "eps")  # what smoothness.run_world writes


def child(repo: Path, beta: float) -> dict:
    """One world with the code of ``repo`` in this interpreter."""
    import resource

    sys.path.insert(0, str(repo / "workflow" / "scripts"))
    import yaml

    import crl_approx
    from crl_approx.runtime import configure_allocator

    # the code measured is the one asked for, not an installed or a neighbouring copy
    assert Path(crl_approx.__file__).resolve().is_relative_to(repo.resolve()), crl_approx.__file__
    configure_allocator()
    from crl_approx.numerics import smoothness

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    smooth = config["smoothness"]
    before = resource.getrusage(resource.RUSAGE_SELF)
    scale = smoothness.solve_scale(beta, smooth["mutual_information"])
    world = smoothness.world_tables(beta, scale, smooth, config["tau"])
    after = resource.getrusage(resource.RUSAGE_SELF)
    digest = hashlib.sha256()
    for name in TABLES:
        digest.update(world[name].to_csv(index=False, float_format="%.17g").encode())
    return {
        "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        "max_rss_mib": after.ru_maxrss / 1024,  # the process's peak resident memory
        "table_sha256": digest.hexdigest(),
    }


def run_child(repo: Path, beta: float) -> dict:
    return child_json(__file__, "--child", "--repo", str(repo), "--betas", str(beta))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD")
    ap.add_argument("--betas", default="0.5,2")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    betas = [float(b) for b in a.betas.split(",")]
    if a.child:
        print(json.dumps(child(a.repo, betas[0])))
        return 0
    record = {
        "what": "rule compute_smoothness's computation (smoothness.world_tables) at --before (a "
        "worktree) and at this working tree, in fresh interpreters, alternating; CPU = user + "
        "system of the child, median; peak resident memory of the child, median",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "before": git("rev-parse", "--short", a.before),
        "after": git("describe", "--always", "--dirty"),
        "load_at_start": os.getloadavg()[0],
        "repeats": a.repeats,
        "cells": {},
    }
    same = True
    with checkout(a.before) as tree:
        for beta in betas:
            runs = {"before": [], "after": []}
            for _ in range(a.repeats):
                for mode, repo in (("before", tree), ("after", REPO)):
                    runs[mode].append(run_child(repo, beta))
            row = {"beta": beta}
            for mode, rs in runs.items():
                row[f"{mode}_cpu_s"] = statistics.median(r["cpu_s"] for r in rs)
                row[f"{mode}_max_rss_mib"] = statistics.median(r["max_rss_mib"] for r in rs)
            row["speedup"] = row["before_cpu_s"] / row["after_cpu_s"]
            row["bitwise"] = len({r["table_sha256"] for rs in runs.values() for r in rs}) == 1
            same &= row["bitwise"]
            record["cells"][f"beta~{beta:g}"] = row
            print(
                f"beta {beta:g}: before {row['before_cpu_s']:6.1f} s CPU, "
                f"{row['before_max_rss_mib']:.0f} MiB; after {row['after_cpu_s']:6.1f} s, "
                f"{row['after_max_rss_mib']:.0f} MiB ({row['speedup']:.2f}x); "
                f"tables {'bitwise the same' if row['bitwise'] else 'DIFFER'}"
            )
    finish(record, a.out)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
