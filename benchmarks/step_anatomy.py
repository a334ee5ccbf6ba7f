"""Where one training step's time goes, against its FLOP limit (issue 35): every ATen call of a
step, timed alone, beside the step itself; and what a job pays before its first step.

Per cell type (the sampled objective on the mixture at D = 2, on the LCGM at D = 8 and on the
digits at K = 5, D = 5; the population objective on the mixture at D = 2 with the inner and the
cosine score; 3 stacked seeds, the default config's model; ``step_levers.build_step``), in a fresh
interpreter at one thread, with the step the jobs run (compiled where it builds):

1. the step's CPU time per step (user + system, getrusage), over ``--steps`` steps after 20 of
   warm-up: what the step costs;
2. one step's ATen calls, recorded as they are dispatched (a ``TorchDispatchMode``: the compiled
   step's calls from C++ too), each with a copy of its arguments, strides kept: the calls a step
   adds to a run of steps (:func:`one_step`), not those a run makes once per block of steps;
3. each recorded call timed alone on those copies: repeated until a block of repeats lasts
   ``--block-ms``, the best of 3 blocks, less what a call costs with nothing to compute
   (``aten.alias`` of a scalar, timed the same way: the dispatch from Python); summed per kind
   (matrix products, softmax, AdamW, the rest): what each kind's kernels cost at their own
   shapes on a warm cache. The rest of the step is the step less the first three kinds; of it,
   its calls alone and, beyond them, what the step pays around every call (the dispatch from
   C++, the caches between calls). The rest's five costliest ATen names are recorded.

The limit of a step is its matmul work as ``flop_limit.py`` counts it (three forward passes of
every replica) at this host's one-thread float32 matmul peak, measured just before and just after
each cell (the limit at their mean: a shared host's speed drifts within a run). The
recorded products' own FLOPs must equal that count less the first layers' input gradients, which
the count includes and no step computes (exit 1 otherwise). So ``products alone / limit`` is what
the step would cost if it computed nothing but its products, each at the speed this host's BLAS
reaches on its shape at one thread (best case: warm caches, the best of 3 blocks): an estimate of
the floor under a step that issues these products through ATen. The
record also holds what a job pays before its first step whatever it trains: a fresh interpreter
importing torch (CPU of the child, the least of 3). Nothing else should run on the host.

    python3 benchmarks/step_anatomy.py [--steps 200] [--block-ms 20]
                                       [--out benchmarks/step_anatomy.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from step_levers import SCRIPTS, build_step  # noqa: E402

CELLS = (
    "gmm_samples_D2",
    "lcgm_samples_D8",
    "digits_samples_D5",
    "gmm_population_D2",
    "gmm_cosine_population_D2",
)
#: the kinds of call timed alone (by ATen name); everything else is the step's "rest"
KINDS = {
    "products": ("aten.mm.default", "aten.addmm.default", "aten.bmm.default"),
    "softmax": ("aten._softmax.default",),
    "adamw": ("aten._fused_adamw_.default",),
}


def kind_of(name: str) -> str:
    return next((k for k, names in KINDS.items() if name in names), "rest")


#: a product with a side this short or shorter is narrow (the D-wide ones, a 1-d input's layer)
NARROW = 8


def operands(name: str, args) -> tuple:
    """The two factors of a recorded product: mm(a, b), addmm(bias, a, b), bmm(a, b)."""
    return (args[1], args[2]) if name == "aten.addmm.default" else (args[0], args[1])


def product_flops(name: str, args) -> int:
    """2·m·k·n of a recorded product (times the batch of a bmm)."""
    a, b = operands(name, args)
    batch = a.shape[0] if a.dim() == 3 else 1
    return 2 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]


def is_narrow(name: str, args) -> bool:
    """Whether a recorded product has a side (m, k or n) of at most NARROW."""
    a, b = operands(name, args)
    return min(a.shape[-2], a.shape[-1], b.shape[-1]) <= NARROW


def copy_args(value):
    """A copy of a call's arguments: tensors with their sizes and strides (a fresh storage; a
    tensor whose elements share memory, e.g. an expanded one, as a contiguous clone), the rest as
    they are."""
    import torch

    if isinstance(value, torch.Tensor):
        if any(st == 0 and n > 1 for st, n in zip(value.stride(), value.shape, strict=True)):
            return value.clone(memory_format=torch.contiguous_format)
        out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype)
        return out.copy_(value)
    if isinstance(value, list | tuple):
        return type(value)(copy_args(v) for v in value)
    return value


def record_calls(fn) -> list:
    """Every ATen call ``fn()`` dispatches: (name, args, kwargs), the arguments copied before the
    call (an in-place call sees what it saw in the step)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    calls = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            calls.append((str(func), func, copy_args(args), copy_args(kwargs)))
            return func(*args, **kwargs)

    with Recorder():
        fn()
    return calls


def one_step(record) -> list:
    """The calls of one step as ``run_steps`` issues it in its loop. ``record(k)`` records a run
    of k steps: ``head + k·step + tail``, where head and tail are what a run does once (the loss
    total; its mean). So the step is what a run of 1 step adds to a run of none: the calls of the
    1-step run after its first h, for the one h at which the rest is the empty run's (exit 1 if
    none fits, or several: the step's calls would be ambiguous by a shift)."""
    none, one = record(0), record(1)
    n = len(one) - len(none)
    names0, names1 = [c[0] for c in none], [c[0] for c in one]
    fits = [h for h in range(len(none) + 1) if n > 0 and names1[:h] + names1[h + n :] == names0]
    if len(fits) != 1:
        sys.exit(f"one step's calls not found: {len(none)} calls for no step, {len(one)} for 1")
    return one[fits[0] : fits[0] + n]


@contextlib.contextmanager
def once_per_run_muted(step_loss):
    """The hand-written steps' weights are copied into the model (``write_back``, ~100 calls) when
    a run of steps returns, once per block of steps in a job: not a step's; muted here."""
    weights = getattr(step_loss, "weights", None)
    if weights is None:
        yield
        return
    weights.write_back = lambda: None
    try:
        yield
    finally:
        del weights.write_back


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def time_alone(func, args, kwargs, block_s: float) -> float:
    """The best CPU seconds of one call on its own arguments: repeats in blocks meant to last
    ``block_s`` (the count from one first timing, at most 10,000), the best of 3 blocks. An
    in-place call repeats on the same copy (its cost does not depend on the values: denormals are
    flushed, as in a job)."""
    func(*args, **kwargs)
    t = time.process_time()
    func(*args, **kwargs)
    once = max(time.process_time() - t, 1e-7)
    reps = max(1, min(10_000, int(block_s / once)))
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        for _ in range(reps):
            func(*args, **kwargs)
        best = min(best, (time.process_time() - t) / reps)
    return best


def child(cell: str, steps: int, block_ms: float) -> dict:
    """One cell, in this (fresh) interpreter: the step timed, then each of its calls alone."""
    sys.path.insert(0, str(SCRIPTS))
    from crl_approx.training.loops import run_steps

    model, opt, step_loss, shape = build_step(cell, steps + 30)
    run_steps(model, opt, step_loss, 20)  # warm-up: first-touch of the working set
    t = cpu_s()
    run_steps(model, opt, step_loss, steps)
    step_s = (cpu_s() - t) / steps
    with once_per_run_muted(step_loss):
        calls = one_step(lambda k: record_calls(lambda: run_steps(model, opt, step_loss, k)))
    import torch

    call_s = time_alone(torch.ops.aten.alias.default, (torch.zeros(()),), {}, block_ms / 1e3)
    alone = dict.fromkeys((*KINDS, "rest"), 0.0)
    counts = dict.fromkeys((*KINDS, "rest"), 0)
    by_name: dict[str, float] = {}  # the rest's calls alone, per ATen name
    flops = 0
    narrow = {"ms": 0.0, "flops": 0}  # the narrow products' share
    for name, func, args, kwargs in calls:
        kind = kind_of(name)
        counts[kind] += 1
        took = max(0.0, time_alone(func, args, kwargs, block_ms / 1e3) - call_s)
        alone[kind] += took
        if kind == "rest":
            by_name[name] = by_name.get(name, 0.0) + took
        if kind == "products":
            work = product_flops(name, args)
            flops += work
            if is_narrow(name, args):
                narrow["ms"] += 1e3 * took
                narrow["flops"] += work
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:5]
    weights = getattr(step_loss, "weights", None)
    return {
        "cell": cell,
        "shape": shape,  # (points, d_x, d_y, D)
        "replicas": model.replicas,
        "compiled": getattr(weights, "native", None) is not None,
        "step_ms": 1e3 * step_s,
        "alone_ms": {k: 1e3 * v for k, v in alone.items()},
        "call_us": 1e6 * call_s,
        "calls": len(calls),
        "counts": counts,  # calls per kind
        "rest_top_ms": {name: 1e3 * took for name, took in top},
        "product_flops": flops,
        "narrow": narrow,
    }


def work_flops(shape, replicas: int, width: int, depth: int) -> tuple[float, float]:
    """A step's matmul work as flop_limit.py counts it (three forward passes per replica), and
    the part of it no step computes (each tower's first-layer input gradient)."""
    from flop_limit import forward_flops

    points, d_x, d_y, dim = shape
    counted = replicas * 3 * forward_flops(points, points, d_x, d_y, width, depth, dim)
    return counted, replicas * 2 * points * (d_x + d_y) * width


def import_cpu_s(repeats: int = 3) -> float:
    """CPU seconds of a fresh interpreter that imports torch (the child's user + system), the
    least of ``repeats``."""
    runs = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        runs.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(runs)


def row_of(meas: dict, peak: float, width: int, depth: int) -> dict:
    counted, unneeded = work_flops(meas["shape"], meas["replicas"], width, depth)
    if meas["product_flops"] != counted - unneeded:
        sys.exit(
            f"{meas['cell']}: the step's products do {meas['product_flops']} FLOP, the work model "
            f"{counted:.0f} less {unneeded:.0f} (first-layer input gradients)"
        )
    limit_ms = 1e3 * counted / peak
    alone = {k: v for k, v in meas["alone_ms"].items() if k != "rest"}
    rest = meas["step_ms"] - sum(alone.values())
    return {
        "cell": meas["cell"],
        "compiled": meas["compiled"],
        "calls": meas["calls"],
        "counts": meas["counts"],
        "call_us": round(meas["call_us"], 2),
        "limit_ms": round(limit_ms, 3),
        "step_ms": round(meas["step_ms"], 3),
        "alone_ms": {k: round(v, 3) for k, v in alone.items()},
        # the step's other calls and the dispatch of all: the step less the kernels timed alone;
        # of it, the other calls alone (their kernels and outputs) and what the step pays beyond
        # every call alone (the dispatch from C++, caches between calls)
        "rest_ms": round(rest, 3),
        "rest_alone_ms": round(meas["alone_ms"]["rest"], 3),
        "beyond_ms": round(rest - meas["alone_ms"]["rest"], 3),
        "rest_top_ms": {k: round(v, 3) for k, v in meas["rest_top_ms"].items()},
        "products_gflops": round(meas["product_flops"] / alone["products"] / 1e6, 1),
        "products_over_limit": round(alone["products"] / limit_ms, 2),
        # products with a side of at most NARROW: their share of the products' time and FLOPs
        "narrow_time_share": round(meas["narrow"]["ms"] / alone["products"], 3),
        "narrow_flop_share": round(meas["narrow"]["flops"] / meas["product_flops"], 4),
        "step_over_limit": round(meas["step_ms"] / limit_ms, 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--block-ms", type=float, default=20.0)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.steps, args.block_ms)))
        return 0
    import yaml
    from flop_limit import bracketed, bracketed_head

    sys.path.insert(0, str(SCRIPTS))
    from crl_approx.training import native
    from crl_approx.training.host import PEAK_N

    train = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["train"]
    native.module()  # built before, untimed
    load = os.getloadavg()[0]
    torch_import = import_cpu_s()
    rows, peaks = [], []
    for cell in args.cells.split(","):
        cmd = [sys.executable, __file__, "--child", cell, "--steps", str(args.steps)]
        cmd += ["--block-ms", str(args.block_ms)]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        out, before, after = bracketed(
            lambda cmd=cmd, env=env: subprocess.run(
                cmd, capture_output=True, text=True, env=env, check=True
            )
        )
        peaks += [before / 1e9, after / 1e9]
        meas = json.loads(out.stdout.strip().splitlines()[-1])
        row = row_of(meas, (before + after) / 2, train["width"], train["depth"])
        row["peaks_gflops"] = [round(before / 1e9, 1), round(after / 1e9, 1)]
        rows.append(row)
        a = row["alone_ms"]
        print(
            f"{cell:26s} limit {row['limit_ms']:6.2f} ms  step {row['step_ms']:6.2f} ms "
            f"({row['step_over_limit']:.2f}x)  alone: products {a['products']:.2f} ms "
            f"({row['products_over_limit']:.2f}x, {row['products_gflops']} GFLOP/s), softmax "
            f"{a['softmax']:.2f}, AdamW {a['adamw']:.2f}; the rest {row['rest_ms']:.2f} ms "
            f"({row['counts']['rest']} calls alone {row['rest_alone_ms']:.2f}, beyond "
            f"{row['beyond_ms']:.2f}; a call {row['call_us']:.1f} us)",
            flush=True,
        )
    print(
        f"peak {min(peaks):.1f}-{max(peaks):.1f} GFLOP/s; "
        f"a fresh interpreter that imports torch: {torch_import:.2f} s"
    )
    if args.out:
        # every peak probe (one before and one after each cell), GFLOP/s
        record = bracketed_head(peaks) | {
            "peak_n": PEAK_N,  # the square product the peak is measured on
            "narrow_side": NARROW,
            "steps": args.steps,
            "load_before": round(load, 2),
            "torch_import_cpu_s": round(torch_import, 2),
            "cells": rows,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
