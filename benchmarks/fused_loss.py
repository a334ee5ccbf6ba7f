"""Issue 35's lever "the softmax and the loss fused where the data allow", measured before it is
built: one replica's in-batch InfoNCE tail as the compiled step issues it, against two fused
kernels (benchmarks/fused_loss.cpp), and what they would take off a step.

The tail is everything of a sampled step between the towers' outputs f, g (D × B) and their
gradients: the scores S = (f/τ)ᵀ g (B × B), the loss, P = softmax(S), ∂L/∂S = (P − I)/B, and the
products g (∂L/∂S)ᵀ and f ∂L/∂S. *aten* issues it as native_step.cpp does (ATen calls); *fused*
computes it row by row without a B × B matrix (a row's scores, exponentials and gradient stay in
L1; the products are the kernel's own loops); *partial* keeps BLAS's three products and fuses the
rest into one pass per row. Both fused kernels use their own exp (Cephes' polynomial) and sum in
another order: they agree with *aten* to float32 rounding, not bitwise, so adopting one would
re-baseline every trained number (issue 35's guarantees).

Per D of the shipped configs (batch B and τ of config/config.yaml; f, g standard normal draws),
at one thread with the jobs' allocator and denormals flushed: the CPU time per call of each
(alternating blocks of repeats, the best block), their largest relative difference from *aten*,
and, for the step-anatomy record's sampled cells, the step's time less every replica's saving
(the faster fused kernel at that D), and the FLOP-limit record's jobs of those steps less the
saving in each of their steps: projections, not measured steps. Nothing else should run on the
host.

    python3 benchmarks/fused_loss.py [--out benchmarks/fused_loss.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
SOURCE = Path(__file__).with_name("fused_loss.cpp")
DIMS = (1, 2, 4, 8, 16)
#: the step-anatomy cells whose step the projection takes (their D: the name's last digits)
CELLS = ("gmm_samples_D2", "lcgm_samples_D8")
#: FLOP-limit jobs whose step is another cell's (benchmarks/flop_limit.py's cells)
JOB_STEP = {"gmm_fresh_D2": "gmm_samples_D2"}


def build():
    """The kernels, compiled for this machine (``-march=native``) into the native step's cache
    folder, one sub-folder per CPU feature set (a cache shared by other hosts keeps theirs)."""
    import hashlib

    from torch.utils import cpp_extension

    sys.path.insert(0, str(SCRIPTS))
    from crl_approx.render.reference import cpu_kernels
    from crl_approx.training import native

    cpu = hashlib.sha256(cpu_kernels().encode()).hexdigest()[:12]
    where = native.cache_dir() / f"fused_loss-{cpu}"
    where.mkdir(parents=True, exist_ok=True)
    return cpp_extension.load(
        name="crl_fused_loss",
        sources=[str(SOURCE)],
        extra_cflags=["-O3", "-march=native"],
        build_directory=str(where),
        verbose=False,
    )


def inputs(dim: int, batch: int, seed: int = 0):
    import torch

    gen = torch.Generator().manual_seed(seed)
    return torch.randn(dim, batch, generator=gen), torch.randn(dim, batch, generator=gen)


def rel_diff(got, ref) -> float:
    """The largest relative difference (in each output's norm) of one tail's outputs from
    another's (*aten*'s)."""
    return max(float((a - b).norm() / b.norm()) for a, b in zip(got, ref, strict=True))


def projection(anatomy: dict, flop: dict, rows: list[dict], replicas: int) -> list[dict]:
    """Each of CELLS's step (the anatomy record's) less ``replicas`` times the saving of the
    faster fused kernel at its D, over the step's limit; and each FLOP-limit job that runs that
    step (the fresh stream's runs the mixture's) less the saving in each of its steps, over the
    job's limit (validation's forward passes, which would save too, left as they are), for the
    row's run and, as a range, for each run the record keeps."""
    by_dim = {r["dim"]: r for r in rows}
    jobs = {c["cell"]: c for c in flop["cells"]}
    out = []
    for c in anatomy["cells"]:
        if c["cell"] not in CELLS:
            continue
        r = by_dim[int(c["cell"].rsplit("D", 1)[1])]
        saving_ms = replicas * (r["aten_us"] - min(r["fused_us"], r["partial_us"])) / 1e3
        for cell in [c["cell"], *[k for k, v in JOB_STEP.items() if v == c["cell"]]]:
            job = jobs.get(cell)
            cut_s = job["steps"] * saving_ms / 1e3 if job else 0.0
            runs = [
                round((run["job_cpu_s"] - cut_s) / run["limit_s"], 2)
                for run in (job or {}).get("runs", [])
            ]
            out.append(
                {
                    "cell": cell,
                    "step": c["cell"],
                    "step_ms": c["step_ms"],
                    "saving_ms": round(saving_ms, 3),
                    "step_over_limit": c["step_over_limit"],
                    "projected_step_over_limit": round(
                        (c["step_ms"] - saving_ms) / c["limit_ms"], 2
                    ),
                    "job_over_limit": job and job["job_over_limit"],
                    "projected_job_over_limit": job
                    and round((job["job_cpu_s"] - cut_s) / job["limit_s"], 2),
                    # over the FLOP-limit record's runs of the job, where it keeps them
                    "projected_job_range": [min(runs), max(runs)] if runs else None,
                }
            )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=5)
    args = ap.parse_args(argv)
    import torch
    import yaml

    sys.path.insert(0, str(SCRIPTS))
    from crl_approx.training.host import configure_threads

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    batch, tau, replicas = cfg["train"]["batch_size"], float(cfg["tau"]), len(cfg["seeds"])
    mod = build()  # untimed
    configure_threads(1, torch.device("cpu"))  # one thread, the jobs' allocator, denormals flushed
    load = os.getloadavg()[0]
    rows = []
    for dim in DIMS:
        ft, gt = inputs(dim, batch)
        aten, fused, partial = mod.time_tails(ft, gt, tau, args.reps, args.blocks)
        ref = mod.aten_tail(ft, gt, tau)
        diff = {
            kind: rel_diff(getattr(mod, f"{kind}_tail")(ft, gt, tau), ref)
            for kind in ("fused", "partial")
        }
        rows.append(
            {
                "dim": dim,
                "aten_us": round(1e6 * aten, 1),
                "fused_us": round(1e6 * fused, 1),
                "partial_us": round(1e6 * partial, 1),
                "fused_rel_diff": float(f"{diff['fused']:.1e}"),
                "partial_rel_diff": float(f"{diff['partial']:.1e}"),
            }
        )
        r = rows[-1]
        print(
            f"D = {dim:2d}: aten {r['aten_us']:6.1f} us, fused {r['fused_us']:6.1f} us "
            f"(rel. diff {r['fused_rel_diff']:.0e}), partial {r['partial_us']:6.1f} us "
            f"(rel. diff {r['partial_rel_diff']:.0e})",
            flush=True,
        )
    anatomy = json.loads((REPO / "benchmarks" / "step_anatomy.json").read_text())
    flop = json.loads((REPO / "benchmarks" / "flop_limit.json").read_text())
    projected = projection(anatomy, flop, rows, replicas)
    for p in projected:
        print(
            f"{p['cell']}: step {p['step_over_limit']}x its limit, less {p['saving_ms']} ms: "
            f"{p['projected_step_over_limit']}x; job {p['job_over_limit']}x, projected "
            f"{p['projected_job_over_limit']}x"
        )
    if args.out:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from flop_limit import record_head

        from crl_approx.training.host import matmul_peak

        record = record_head(matmul_peak()) | {
            "batch": batch,
            "tau": tau,
            "replicas": replicas,
            "reps": args.reps,
            "blocks": args.blocks,
            "load_before": round(load, 2),
            "anatomy_commit": anatomy["commit"],
            "flop_limit_commit": flop["commit"],
            "rows": rows,
            "projected": projected,
        }
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
