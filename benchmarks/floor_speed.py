"""The rank-D floor's solver (crl_approx.numerics.floor) at two versions of the code, side by side
in one run: ``--before`` (a git ref, checked out into a temporary worktree) and this working tree,
each in a fresh interpreter, alternating, one thread, the jobs' allocator setting in both.

Cells: Experiment S's floor (rule compute_smoothness_floor) at ``--beta`` and ``--dims`` on the
default config's grids, and Table 1's exact floor (rule compute_rank_floor) on the default
mixture. Prints per cell the child's CPU seconds (user + system, median over ``--repeats``), the
ratio before / after, and how far the floors moved: the largest relative difference of a floor
value and of the L-BFGS iteration counts (a change of rounding changes L-BFGS's path, so the
floors agree to the solver's convergence, not bitwise). Nothing else should run on the host.

    python3 benchmarks/floor_speed.py --before HEAD [--beta 0.5] [--dims 1,2] [--repeats 2]
                                      [--out benchmarks/floor_speed.json]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CELLS = ("smoothness_floor", "table1_floor")


def child(repo: Path, cell: str, beta: float, dims: list[int]) -> dict:
    """One cell with the code of ``repo`` in this interpreter."""
    import resource

    sys.path.insert(0, str(repo / "workflow" / "scripts"))
    import yaml

    import crl_approx
    from crl_approx.runtime import configure_allocator

    # the code measured is the one asked for, not an installed or a neighbouring copy
    assert Path(crl_approx.__file__).resolve().is_relative_to(repo.resolve()), crl_approx.__file__
    configure_allocator()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    before = resource.getrusage(resource.RUSAGE_SELF)
    if cell == "smoothness_floor":
        from crl_approx.numerics import smoothness

        smooth = {**config["smoothness"], "dims": dims}
        scale = smoothness.solve_scale(beta, smooth["mutual_information"])
        table = smoothness.floor_curve(beta, scale, smooth, config["tau"])
    else:
        from crl_approx.models.gmm import GaussianMixture
        from crl_approx.numerics import floor

        gmm = config["gmm"]
        mix = GaussianMixture.from_config(gmm)
        table = floor.floor_table(mix, gmm["dims"], config["tau"], gmm["quadrature_nodes"])
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        "floor": table["rank_d_floor_excess_risk"].tolist(),
        "iterations": table["lbfgs_iterations"].tolist(),
        "D": table["D"].tolist(),
    }


def child_json(script: str, *args: str) -> dict:
    """``script`` with ``args`` in a fresh interpreter at one thread: the JSON of its last line."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, script, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def finish(record: dict, out: Path | None) -> None:
    """The record's closing load average, and the record written to ``out`` when given."""
    record["load_at_end"] = os.getloadavg()[0]
    if out:
        out.write_text(json.dumps(record, indent=1) + "\n")


def run_child(repo: Path, cell: str, beta: float, dims: list[int]) -> dict:
    args = ["--child", cell, "--repo", str(repo), "--beta", str(beta)]
    return child_json(__file__, *args, "--dims", ",".join(map(str, dims)))


def git(*args) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@contextlib.contextmanager
def checkout(ref: str):
    """``ref`` checked out into a temporary worktree (removed after)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "before"
        git("worktree", "add", "--detach", str(tree), ref)
        try:
            yield tree
        finally:
            git("worktree", "remove", "--force", str(tree))


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD")
    ap.add_argument("--beta", type=float, default=0.5)
    ap.add_argument("--dims", default="1,2")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--child", choices=CELLS)
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    dims = [int(d) for d in a.dims.split(",")]
    if a.child:
        print(json.dumps(child(a.repo, a.child, a.beta, dims)))
        return 0

    record = {
        "what": "the floor's solver at --before (a worktree) and at this working tree, each cell "
        "in fresh interpreters, alternating; CPU = user + system of the child, median",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "before": git("rev-parse", "--short", a.before),
        "after": git("describe", "--always", "--dirty"),
        "load_at_start": os.getloadavg()[0],
        "beta": a.beta,
        "dims": dims,
        "repeats": a.repeats,
        "cells": {},
    }
    with checkout(a.before) as tree:
        for cell in a.cells.split(","):
            runs = {"before": [], "after": []}
            for _ in range(a.repeats):
                for mode, repo in (("before", tree), ("after", REPO)):
                    runs[mode].append(run_child(repo, cell, a.beta, dims))
            b, f = runs["before"][0], runs["after"][0]
            row = {
                "D": b["D"],
                "before_cpu_s": statistics.median(r["cpu_s"] for r in runs["before"]),
                "after_cpu_s": statistics.median(r["cpu_s"] for r in runs["after"]),
                "floor_before": b["floor"],
                "floor_after": f["floor"],
                "max_rel_floor_change": max(map(rel, b["floor"], f["floor"])),
                "iterations_before": b["iterations"],
                "iterations_after": f["iterations"],
            }
            row["speedup"] = row["before_cpu_s"] / row["after_cpu_s"]
            record["cells"][cell] = row
            print(
                f"{cell:18s} before {row['before_cpu_s']:7.1f} s CPU  after "
                f"{row['after_cpu_s']:7.1f} s  ({row['speedup']:.2f}x)  floors within "
                f"{row['max_rel_floor_change']:.1e} relative; L-BFGS iterations "
                f"{b['iterations']} -> {f['iterations']}"
            )
    finish(record, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
