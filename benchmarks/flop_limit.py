"""Each training path's job against its FLOP limit, measured side by side in one run.

FLOP limit of a job = its matrix products' floating-point work (every stacked seed, forward +
backward of every step as three forward passes, plus the forward passes of validation; the softmax,
ReLU, AdamW and bias adds are not counted) at this host's one-thread float32 matmul peak (a 2048³
matmul, best of 5), measured just before and just after each job: the job's limit is at their mean,
since a shared host's speed drifts within a run (the record keeps every probe's range). Each cell's
real job runs alone (``snakemake --cores 1 --forcerun RULE TARGET`` in a scratch folder on the
default config, its inputs made first and not timed); its own log gives its CPU time, split into
start-up, the step loop, validation, evaluation (per-epoch checkpoints and exact excess), final
metrics and writing (crl_approx.runtime.phase). The jobs run the compiled step
(crl_approx.training.native), built first and untimed, where it builds; ``CRL_NATIVE_STEP=0``
measures the Python step (the record's ``step`` says which).
Every cell runs ``--repeats`` times, alternating (every cell once, then again). Prints one line per
job: CPU / limit for the job and for its step loop alone, and where the rest of the job went; the
record keeps each cell's median run by job / limit, the range of both ratios over its runs and each
run's peaks, limit, CPU and ratios. Nothing else should run on the host.

Every job runs with the config's train.step_kernels; with ``--kernels aten,fused`` each cell the
kernels change (the sampled inner-score and the population cells) runs with either in turn, a row
per cell and kernel set.

    python3 benchmarks/flop_limit.py [--dest /tmp/crl-flop-limit] [--out benchmarks/flop_limit.json]
                                     [--cells gmm_samples_D2,lcgm_samples_D8,...] [--repeats 3]
                                     [--kernels fused[,aten]]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from crl_approx.render.html import cpu_name, git_state  # noqa: E402
from crl_approx.render.runrecord import (  # noqa: E402
    job_cpu,
    job_flops,
    job_phases,
    job_steps,
)
from crl_approx.training import native  # noqa: E402
from crl_approx.training.host import matmul_peak  # noqa: E402

SEEDS = 3  # the default config's seeds, stacked in one job


def gmm_cell(objective, score, dim):
    return f"results/encoders/gmm/objective~{objective}/score~{score}/dim~{dim}/seed~0/metrics.json"


#: cell → (rule, target, log, kind); kind selects the work model below
CELLS = {
    "gmm_samples_D2": ("train_encoder", gmm_cell("samples", "inner", 2), "samples"),
    "lcgm_samples_D8": (
        "train_encoder",
        "results/encoders/lcgm/objective~samples/score~inner/dim~8/seed~0/metrics.json",
        "samples",
    ),
    "gmm_population_D2": ("train_encoder", gmm_cell("population", "inner", 2), "population"),
    "gmm_cosine_population_D2": (
        "train_encoder",
        gmm_cell("population", "cosine", 2),
        "population",
    ),
    "gmm_fresh_D2": (
        "train_sample_size",
        "results/sample_size/score~inner/pool~fresh/budget~1x/lr~0.001/dim~2/seed~0/metrics.json",
        "fresh",
    ),
    "digits_K5_D5": (
        "train_digits",
        "results/digits/encoders/K5/dim~5/seed~0/metrics.json",
        "digits",
    ),
}


def forward_flops(bx: int, by: int, dx: int, dy: int, width: int, depth: int, dim: int) -> float:
    """Matmul FLOPs of one forward pass of one replica: both towers (``depth`` linear layers,
    d → width → … → D) on bx and by points and the bx × by score matrix."""

    def tower(b, d):
        dims = [d] + [width] * (depth - 1) + [dim]
        return 2 * b * sum(i * o for i, o in pairwise(dims))

    return tower(bx, dx) + tower(by, dy) + 2 * bx * by * dim


def work(kind: str, metrics: dict, cfg: dict) -> dict:
    """The job's matmul work: steps × (forward + backward = 3 forward) per replica, and
    validation's forward passes; the model's shapes from the config, steps from the metrics."""
    t = cfg["train"]
    w, depth, dim, steps = t["width"], t["depth"], metrics["D"], metrics["steps"]
    val_flops = 0.0
    if kind in ("samples", "fresh"):
        b = t["batch_size"]
        d = 1 if metrics["dataset"] == "gmm" else cfg["lcgm"]["d_x"]
        dy = 1 if metrics["dataset"] == "gmm" else cfg["lcgm"]["d_y"]
        step = 3 * forward_flops(b, b, d, dy, w, depth, dim)
        n_val = cfg["gmm" if metrics["dataset"] == "gmm" else "lcgm"]["n_val"]
        val_flops = t["epochs"] * (n_val // b) * forward_flops(b, b, d, dy, w, depth, dim)
    elif kind == "population":
        n = 2 * t["population_nodes"]  # nodes per component, two components
        step = 3 * forward_flops(n, n, 1, 1, w, depth, dim)
    elif kind == "digits":
        b, dg = cfg["digits"]["batch_size"], cfg["digits"]
        step = 3 * forward_flops(b, b, 64, 64, w, depth, dim)  # 8 × 8 images, one per tower
        n_val = metrics.get("n_val_pairs") or dg.get("n_val_pairs", 0)
        val_flops = dg["checkpoints"] * (n_val // b) * forward_flops(b, b, 64, 64, w, depth, dim)
    else:
        raise ValueError(kind)
    return {"steps": steps, "step_flops": SEEDS * step * steps, "val_flops": SEEDS * val_flops}


def record_head(peak: float) -> dict:
    """What a benchmark record of this checkout and host begins with: the date, HEAD's commit,
    the CPU, torch, and the one-thread float32 matmul peak measured in the same run."""
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "commit": git_state(REPO)["commit"],
        "cpu": cpu_name(),
        "torch": torch.__version__,
        "peak_gflops": round(peak / 1e9, 1),
    }


def bracketed(fn):
    """``fn()``'s result with the host's one-thread matmul peak (FLOP/s) just before and just
    after it: a shared host's speed drifts within a run, so a limit takes their mean."""
    before = matmul_peak()
    out = fn()
    return out, before, matmul_peak()


def bracketed_head(peaks: list[float]) -> dict:
    """:func:`record_head` at the median of a run's peak probes (GFLOP/s), with their range."""
    low, high = round(min(peaks), 1), round(max(peaks), 1)
    return record_head(statistics.median(peaks) * 1e9) | {"peak_range_gflops": [low, high]}


def snakemake(dest: Path, *args: str) -> str:
    cmd = ["snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(dest), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout + proc.stderr


def measure(name: str, dest: Path, cfg: dict, kernels: str = "aten") -> dict:
    """One run of one cell's job alone, between two measurements of the host's one-thread matmul
    peak (:func:`bracketed`); its limit at their mean. ``kernels``: train.step_kernels."""
    rule, target, kind = CELLS[name]
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    override = dest / f"kernels-{kernels}.yaml"  # deep-merged on top of the default config
    override.write_text(yaml.safe_dump({"train": {"step_kernels": kernels}}))
    config = ("--configfile", str(override))
    text, before, after = bracketed(
        lambda: snakemake(dest, "--cores", "1", *config, "--forcerun", rule, "--", target)
    )
    wall = time.monotonic() - t0
    peak = (before + after) / 2
    log = re.search(r"log: (\S+\.log)", text).group(1)
    cpu, startup = job_cpu(dest / log)
    phases = job_phases(dest / log)
    ran = sorted(set(job_steps(dest / log)))  # the step the job ran, as it logged it
    metrics = json.loads((dest / target).read_text())
    flops = work(kind, metrics, cfg)
    # the job's own count (its log, crl_approx.runtime.count_flops) against this work model
    counted = job_flops(dest / log)
    model_flop = flops["step_flops"] + flops["val_flops"]
    if abs(sum(counted.values()) - model_flop) > 1e-9 * model_flop:
        sys.exit(f"{name}: the job counted {counted} FLOP, this work model {model_flop:.6g}")
    limit = model_flop / peak
    step_limit = flops["step_flops"] / peak
    return {
        "cell": name,
        "rule": rule,
        "steps": flops["steps"],
        "peaks_gflops": [round(before / 1e9, 1), round(after / 1e9, 1)],
        "limit_s": round(limit, 2),
        "step_limit_s": round(step_limit, 2),  # the steps' part (the rest: validation)
        "job_cpu_s": round(cpu, 2),
        "job_wall_s": round(wall, 2),
        "startup_cpu_s": round(startup, 2),
        "phase_cpu_s": {k: round(v, 2) for k, v in phases.items()},
        "other_cpu_s": round(cpu - startup - sum(phases.values()), 2),
        "job_over_limit": round(cpu / limit, 2),
        "steps_over_limit": round(phases.get("steps", float("nan")) / step_limit, 2),
        "load_before": round(load, 2),
        "step": ", ".join(ran),
        # the sampled step's kernels as the job logged them (none for a population job)
        "kernels": ", ".join(sorted(set(job_steps(dest / log, kernels=True)))) or None,
        "kernels_asked": kernels,
    }


#: what a run of a cell keeps in the cell's summary besides the fields of its median run
RUN_KEYS = ("peaks_gflops", "limit_s", "job_cpu_s", "job_over_limit", "steps_over_limit")


def summary(runs: list[dict]) -> dict:
    """A cell's row: the fields of its median run by job / limit (job CPU over limit as recorded,
    not the rounded ratio, so that ties keep no order of running; the lower middle one for an
    even count), the range of both ratios over the runs, and each run's peaks, limit, CPU and
    ratios (RUN_KEYS)."""
    ranked = sorted(runs, key=lambda r: r["job_cpu_s"] / r["limit_s"])
    middle = ranked[(len(ranked) - 1) // 2]
    spans = {
        f"{k}_range": [min(r[k] for r in runs), max(r[k] for r in runs)]
        for k in ("job_over_limit", "steps_over_limit")
    }
    return (
        middle
        | spans
        | {
            "runs": [{k: r[k] for k in RUN_KEYS} for r in runs],
        }
    )


def line(name: str, r: dict) -> str:
    return (
        f"{name:26s} {r['kernels'] or '':5s} limit {r['limit_s']:7.2f} s  "
        f"job CPU {r['job_cpu_s']:7.2f} s "
        f"({r['job_over_limit']:.2f}x; step loop {r['steps_over_limit']:.2f}x)  "
        f"start-up {r['startup_cpu_s']:.1f} s, {r['phase_cpu_s']}, other {r['other_cpu_s']} s; "
        f"peak {r['peaks_gflops'][0]}, {r['peaks_gflops'][1]} GFLOP/s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, default=Path("/tmp/crl-flop-limit"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kernels", help="train.step_kernels, one or several (default: the config's)")
    args = ap.parse_args()
    cells = args.cells.split(",")
    args.dest.mkdir(parents=True, exist_ok=True)
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    default = cfg["train"]["step_kernels"]
    kernels = args.kernels.split(",") if args.kernels else [default]
    # (cell, kernels) pairs: every cell's step depends on the kernel set (the sampled inner-score
    # and the population steps; no cell here trains the sampled cosine step)
    pairs = [(c, k) for c in cells for k in kernels]
    # every cell's inputs first (datasets, digits), untimed
    targets = [CELLS[c][1] for c in cells]
    rules = sorted({CELLS[c][0] for c in cells})
    snakemake(args.dest, "--cores", "2", "--omit-from", *rules, "--", *targets)
    # the jobs' step: compiled where it builds (built here first, untimed), else the Python step;
    # CRL_NATIVE_STEP=0 in the environment measures the Python step
    native.module()
    runs = {pair: [] for pair in pairs}
    for _ in range(args.repeats):  # alternating: every cell (and kernel) once, then again
        for name, kernel in pairs:
            runs[name, kernel].append(measure(name, args.dest, cfg, kernel))
            print(line(name, runs[name, kernel][-1]), flush=True)
    rows = [summary(runs[pair]) for pair in pairs]
    peaks = [p for r in rows for run in r["runs"] for p in run["peaks_gflops"]]
    # every matmul-peak probe of the run (one before and one after each job), GFLOP/s
    record = bracketed_head(peaks) | {
        "repeats": args.repeats,
        "kernels": kernels,
        # the step every job logged it ran: "compiled", "python (…)", or "mixed"
        "step": rows[0]["step"] if len({r["step"] for r in rows}) == 1 else "mixed",
        "cells": rows,
    }
    print(f"one-thread float32 matmul peak {record['peak_gflops']} GFLOP/s")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
