"""Two commits' whole runs side by side in one session: a change's effect on the run, measured
against its base on the same host, alternating, so the host's drift hits both alike.

Each side is a clean clone of its commit, measured by that commit's own ``benchmarks/
default_run.py`` (each run in a fresh clone, the compiled step built inside it as on a new
machine); the runs alternate base, head, base, head … ``--repeats`` times. The record keeps every
run's wall time, its jobs' own CPU (their logs), its job time (Snakemake's benchmark files) and
the load before it, and per side the medians and the ratios base / head. A single run of the
default configuration moves by a few per cent from run to run on this host (its jobs' CPU by as
much as the change under test): one run each is not a measurement of a change.

    python3 benchmarks/run_ab.py --base REV [--head HEAD] [--configfile config/smoke.yaml]
                                 [--repeats 2] [--out benchmarks/run_ab.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIELDS = ("wall_s", "job_cpu_s", "job_s")


def rev(ref: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", ref], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def one_run(commit: str, tmp: Path, tag: str, configfile: str | None) -> dict:
    """A clean clone of ``commit`` measures itself (its own default_run.py) in a fresh folder."""
    src = tmp / f"src-{tag}"
    if not src.exists():
        subprocess.run(["git", "clone", "-q", str(REPO), str(src)], check=True)
        subprocess.run(["git", "-C", str(src), "checkout", "-q", commit], check=True)
    dest, out = tmp / f"run-{tag}", tmp / f"{tag}.json"
    cmd = [sys.executable, str(src / "benchmarks" / "default_run.py"), "--dest", str(dest)]
    cmd += ["--out", str(out)] + (["--configfile", configfile] if configfile else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        sys.exit(f"the run of {commit[:7]} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    record = json.loads(out.read_text())
    shutil.rmtree(dest, ignore_errors=True)
    keep = {k: record[k] for k in FIELDS}
    return keep | {"load_before": record["load_average_start"], "commit": record["commit"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the commit to compare against")
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--configfile", help="a configfile on top of config/config.yaml")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.repeats < 2:
        sys.exit(
            "--repeats: at least 2 runs a side (one run has no spread to read a change against)"
        )
    sides = {"base": rev(args.base), "head": rev(args.head)}
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for side, commit in sides.items():
                run = one_run(commit, Path(tmp), side, args.configfile)
                if run["commit"] != commit:
                    sys.exit(f"the {side} clone ran {run['commit'][:7]}, not {commit[:7]}")
                runs[side].append(run)
                print(f"{side} {commit[:7]} run {i + 1}: " + json.dumps(run), flush=True)
    medians = {
        side: {k: round(statistics.median(r[k] for r in rs), 1) for k in FIELDS}
        for side, rs in runs.items()
    }
    for m in medians.values():
        m["beyond_cpu_s"] = round(m["job_s"] - m["job_cpu_s"], 1)
    ratios = {k: round(medians["base"][k] / medians["head"][k], 3) for k in FIELDS}
    record = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "configfile": args.configfile or "config/config.yaml",
        "cores": os.cpu_count(),
        "repeats": args.repeats,
        "base": sides["base"],
        "head": sides["head"],
        "runs": runs,
        "median": medians,
        "base_over_head": ratios,
    }
    print(json.dumps({k: record[k] for k in ("median", "base_over_head")}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
