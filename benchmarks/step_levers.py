"""The training step's levers (issue 35), measured side by side in one run: the same training
steps in three modes, alternating, each in a fresh interpreter (mallopt is per process), one
thread:

  before     glibc's default allocator, autograd's step (CRL_DEFAULT_ALLOCATOR=1,
             CRL_AUTOGRAD_STEP=1);
  allocator  the jobs' allocator setting (crl_approx.runtime.configure_allocator), autograd;
  after      the allocator setting and the hand-written steps (crl_approx.training.manual) in
             Python (CRL_NATIVE_STEP=0), what the jobs ran up to 1.16.1;
  native     the same steps compiled (crl_approx.training.native: the same ATen calls from C++),
             what the training jobs run where a C++ compiler is.

Per cell type (the sampled objective on the mixture at D = 2 and on the LCGM at D = 8, the
population objective on the mixture at D = 2 with the inner and the cosine score; 3 stacked
seeds, the default config's model) it
prints the step loop's CPU time per step (user + system, getrusage of the child), the minor page
faults per step, the ratios to ``before``, whether the final parameters of ``before`` and
``allocator`` are bitwise equal, and those of ``after`` and ``native`` (they must be: exit 1
otherwise), and how far ``after``'s mean loss over the timed steps is from autograd's (the
hand-written step keeps the towers' outputs transposed, its products round in another order).
Nothing else should run on the host.

    python3 benchmarks/step_levers.py [--steps 400] [--repeats 3]
                                      [--out benchmarks/step_levers.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
CELLS = ("gmm_samples_D2", "lcgm_samples_D8", "gmm_population_D2", "gmm_cosine_population_D2")


def build_step(cell: str, steps: int):
    """The model, optimiser and ``step_loss`` of one cell's training step (one thread, the jobs'
    allocator unless CRL_DEFAULT_ALLOCATOR=1), the default config's model and seeds, an optimiser
    scheduled over ``steps``: the sampled objective on random pairs of the world's input widths
    (the digits: 8 × 8 images, their batch size), the population objective on the mixture's grid;
    the sampled step with ATen's kernels (train.step_kernels = aten, whatever the config's).
    Also what the FLOP model needs: (batch or grid points, d_x, d_y, D)."""
    import numpy as np
    import torch
    import yaml

    sys.path.insert(0, str(SCRIPTS))
    from crl_approx.models.gmm import GaussianMixture
    from crl_approx.training.batches import pool_batches
    from crl_approx.training.evaluation import Grid
    from crl_approx.training.loops import (
        batch_loss,
        configure_threads,
        make_optimizer,
        population_loss,
    )
    from crl_approx.training.towers import build_model

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    # ATen's kernels (train.step_kernels = aten): the levers and the anatomy are of the step that
    # issues every call through ATen (the fused kernels' loops are not ATen calls)
    train = cfg["train"] | {"step_kernels": "aten"}
    seeds, tau = cfg["seeds"], cfg["tau"]
    dev = torch.device("cpu")
    configure_threads(1, dev)  # the allocator too, unless CRL_DEFAULT_ALLOCATOR=1
    parts = cell.split("_")
    world, objective, dim = parts[0], parts[-2], int(parts[-1][1:])
    if "cosine" in parts:  # the cosine score
        train = train | {"score": "cosine"}
    d_in = {"lcgm": (cfg["lcgm"]["d_x"], cfg["lcgm"]["d_y"]), "digits": (64, 64)}.get(world, (1, 1))
    model = build_model(seeds, *d_in, dim, train)
    if objective == "population":
        mix = GaussianMixture.from_config(cfg["gmm"])
        grid = Grid.from_mixture(mix, train["population_nodes"], torch.float32, dev)
        step_loss = population_loss(model, grid, tau)  # the jobs' step (CRL_AUTOGRAD_STEP)
        points = grid.x.shape[0]
    else:
        points = cfg["digits"]["batch_size"] if world == "digits" else train["batch_size"]
        rng = np.random.default_rng(0)
        n = 64 * points
        x = torch.as_tensor(rng.standard_normal((len(seeds), n, d_in[0])), dtype=torch.float32)
        y = torch.as_tensor(rng.standard_normal((len(seeds), n, d_in[1])), dtype=torch.float32)
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        step_loss = batch_loss(model, pool_batches(x, y, gens, points), tau)
    # the hand-written steps' optimiser updates their own weights (training/manual.py)
    opt = make_optimizer(getattr(step_loss, "weights", model), train, steps)
    return model, opt, step_loss, (points, *d_in, dim)


def child(cell: str, steps: int) -> dict:
    """One measurement, in this (fresh) interpreter: ``steps`` training steps of ``cell``."""
    import hashlib
    import resource

    sys.path.insert(0, str(SCRIPTS))
    from crl_approx.training.loops import run_steps

    model, opt, step_loss, _ = build_step(cell, steps)
    run_steps(model, opt, step_loss, 20)  # warm-up: first-touch of the working set
    before = resource.getrusage(resource.RUSAGE_SELF)
    mean_loss = run_steps(model, opt, step_loss, steps)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    return {
        "cpu_ms_per_step": 1e3 * cpu / steps,
        "system_share": (after.ru_stime - before.ru_stime) / cpu if cpu else 0.0,
        "faults_per_step": (after.ru_minflt - before.ru_minflt) / steps,
        "params_sha256": digest.hexdigest(),
        "mean_loss": mean_loss.tolist(),
        # whether the hand-written step ran compiled (crl_approx.training.native)
        "compiled": getattr(getattr(step_loss, "weights", None), "native", None) is not None,
    }


#: mode -> (CRL_DEFAULT_ALLOCATOR, CRL_AUTOGRAD_STEP, CRL_NATIVE_STEP)
MODES = {
    "before": ("1", "1", "0"),
    "allocator": ("0", "1", "0"),
    "after": ("0", "0", "0"),
    "native": ("0", "0", "1"),
}


def measure(cell: str, steps: int, mode: str) -> dict:
    allocator, autograd, compiled = MODES[mode]
    env = dict(os.environ, CRL_DEFAULT_ALLOCATOR=allocator, CRL_AUTOGRAD_STEP=autograd)
    env["CRL_NATIVE_STEP"] = compiled
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run(
        [sys.executable, __file__, "--child", cell, "--steps", str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.steps)))
        return 0
    rows = []
    for cell in args.cells.split(","):
        runs = {mode: [] for mode in MODES}
        for _ in range(args.repeats):  # alternating: drift of the host hits every mode alike
            for mode in MODES:
                runs[mode].append(measure(cell, args.steps, mode))

        def med(key, mode, runs=runs):
            return statistics.median(r[key] for r in runs[mode])

        # the allocator computes nothing: before and allocator bitwise equal (else exit 1); the
        # hand-written step rounds in another order: its mean loss over the timed steps beside
        # autograd's, relative
        same = len({r["params_sha256"] for m in ("before", "allocator") for r in runs[m]}) == 1
        after_same = {r["params_sha256"] for r in runs["after"]} == {
            runs["before"][0]["params_sha256"]
        }
        gap = max(
            abs(a - b) / abs(b)
            for a, b in zip(
                runs["after"][0]["mean_loss"], runs["before"][0]["mean_loss"], strict=True
            )
        )
        # the compiled step issues the Python step's calls: bitwise its numbers (else exit 1)
        native_same = len({r["params_sha256"] for m in ("after", "native") for r in runs[m]}) == 1
        if not all(r["compiled"] for r in runs["native"]) or any(
            r["compiled"] for m in ("before", "allocator", "after") for r in runs[m]
        ):
            sys.exit(f"{cell}: the compiled step did not run where asked (or ran where not)")
        row = {"cell": cell, "bitwise_equal": same, "after_bitwise_equal": after_same}
        row["native_bitwise_equal"] = native_same
        row["after_loss_rel_gap"] = float(f"{gap:.2g}")
        for mode in MODES:
            row[f"{mode}_cpu_ms_per_step"] = round(med("cpu_ms_per_step", mode), 3)
            row[f"{mode}_faults_per_step"] = round(med("faults_per_step", mode), 1)
            row[f"{mode}_system_share"] = round(med("system_share", mode), 3)
        for mode in ("allocator", "after", "native"):
            row[f"{mode}_speedup"] = round(
                row["before_cpu_ms_per_step"] / row[f"{mode}_cpu_ms_per_step"], 3
            )
        row["native_vs_after"] = round(
            row["after_cpu_ms_per_step"] / row["native_cpu_ms_per_step"], 3
        )
        rows.append(row)
        print(
            f"{cell:18s} CPU/step ms: before {row['before_cpu_ms_per_step']:7.3f}, allocator "
            f"{row['allocator_cpu_ms_per_step']:7.3f} ({row['allocator_speedup']:.2f}x), after "
            f"{row['after_cpu_ms_per_step']:7.3f} ({row['after_speedup']:.2f}x), native "
            f"{row['native_cpu_ms_per_step']:7.3f} ({row['native_vs_after']:.2f}x of after, "
            f"bitwise: {native_same}); faults/step "
            f"{row['before_faults_per_step']:.0f} -> {row['after_faults_per_step']:.0f}; "
            f"allocator bitwise equal: {same}; after: mean loss within {gap:.1e} of autograd's"
        )
    if args.out:
        import torch

        record = {
            "date": dt.date.today().isoformat(),
            "commit": subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
            ).stdout.strip(),
            "torch": torch.__version__,
            "steps": args.steps,
            "repeats": args.repeats,
            "load_before": os.getloadavg()[0],
            "cells": rows,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0 if all(r["bitwise_equal"] and r["native_bitwise_equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
