"""Training speed, measured side by side in one run: the workflow's batched step against a plain
DataLoader loop and against the machine's matmul peak, plus the per-job start-up.

For each of the two heaviest cells of the default run — the Gaussian mixture at D = 8 with the
``samples`` objective (input dimension 1) and the LCGM at D = 8 (input dimension 16) — it trains
for one epoch of the paper's protocol (100k pairs, batch 512, two 3-layer ReLU MLPs of width 128,
AdamW, cosine schedule):

  dataloader  one model; TensorDataset + DataLoader(shuffle=True), cross-entropy, torch.optim.AdamW
              with CosineAnnealingLR, loss.item() each step (the common idiom);
  workflow    R seeds as one stacked model (training.loops: the train_encoder rule's loop),
              counted in model-samples/s (R × pairs/s).

and measures the float32 matmul peak (a 2048³ matmul) at the same thread count, to turn the step's
GEMM FLOPs into a fraction of it. Then, in fresh interpreters, the start-up a job pays before its
first step: ``import torch``, our trainer's imports, and what constructing a torch.optim optimizer
adds (it imports torch._dynamo, which the trainer avoids). Prints tables; asserts nothing.

    python3 benchmarks/train_speed.py [--threads 1] [--replicas 3] [--n 100000] [--repeats 2]
                                      [--out benchmarks/train_speed.json]

With ``--out`` it also writes what it printed as a JSON record; README's training-speed table is
generated from that record (``python3 -m crl_approx.render.readme``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"
sys.path.insert(0, str(SCRIPTS))

from crl_approx.render.html import cpu_name  # noqa: E402
from crl_approx.training import loops as training  # noqa: E402
from crl_approx.training.towers import build_model  # noqa: E402

TAU = 0.5
TRAIN = {"width": 128, "depth": 3, "lr": 1e-3, "weight_decay": 1e-4, "schedule": "cosine"}
# the jobs' sampled-step kernels (train.step_kernels of the default config)
TRAIN["step_kernels"] = re.search(
    r"^  step_kernels: (\w+)", (SCRIPTS.parents[1] / "config" / "config.yaml").read_text(), re.M
)[1]


def flops_per_step(batch: int, width: int, dim: int, d_in: int) -> float:
    """Matmul FLOPs of one step of one model: forward + backward ≈ 3 × forward (the first layer's
    input gradient is not needed, which this slightly over-counts for d_in > 1)."""
    tower = 2 * batch * (d_in * width + width * width + width * dim)
    scores = 2 * batch * batch * dim
    return 3.0 * (2 * tower + scores)


def matmul_rate(m: int, k: int, n: int, reps: int = 5) -> float:
    """Best float32 GFLOP/s of an (m × k) @ (k × n) matmul at the current thread count."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    torch.mm(a, b)
    best = min(_timed(lambda: torch.mm(a, b)) for _ in range(reps))
    return 2 * m * k * n / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class PlainTwoTower(torch.nn.Module):
    """One model as nn.Sequential towers: the baseline everyone writes first."""

    def __init__(self, d_in: int, dim: int, width: int):
        super().__init__()

        def tower():
            return torch.nn.Sequential(
                torch.nn.Linear(d_in, width),
                torch.nn.ReLU(),
                torch.nn.Linear(width, width),
                torch.nn.ReLU(),
                torch.nn.Linear(width, dim),
            )

        self.f, self.g = tower(), tower()

    def loss(self, x, y):
        s = self.f(x) @ self.g(y).T / TAU
        return TAU * F.cross_entropy(s, torch.arange(x.shape[0]))


def epoch_dataloader(x, y, dim, batch):
    torch.manual_seed(0)
    model = PlainTwoTower(x.shape[1], dim, TRAIN["width"])
    opt = torch.optim.AdamW(model.parameters(), lr=TRAIN["lr"], weight_decay=TRAIN["weight_decay"])
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10_000)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=batch, shuffle=True, drop_last=True
    )
    t0 = time.perf_counter()
    steps = 0
    for xb, yb in loader:
        loss = model.loss(xb, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        loss.item()
        steps += 1
    return time.perf_counter() - t0, steps, 1


def epoch_workflow(xs, ys, dim, batch, seeds):
    """One epoch of the train_encoder rule's own loop on R stacked seeds."""
    model = build_model(seeds, xs.shape[2], ys.shape[2], dim, TRAIN)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    t0 = time.perf_counter()
    train = TRAIN | {"batch_size": batch}
    training.shuffled_epoch(model, train, xs, ys, gens, TAU, 10_000).tolist()  # the one host sync
    return time.perf_counter() - t0, xs.shape[1] // batch, len(seeds)


def startup(threads: int) -> dict[str, float]:
    """Seconds a fresh interpreter spends on each job's imports (best of 3)."""
    snippets = {
        "python alone": "pass",
        "import torch": "import torch",
        "trainer imports (crl_approx.training.cells)": "from crl_approx.training import cells",
        "torch.optim.AdamW(...) on top": (
            "from crl_approx.training import cells; import torch; "
            "torch.optim.AdamW([torch.zeros(1, requires_grad=True)])"
        ),
    }
    out = {}
    for name, code in snippets.items():
        cmd = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); {code}"]
        env = {"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
        out[name] = min(
            _timed(lambda c=cmd, e=env: subprocess.run(c, check=True, env=e)) for _ in range(3)
        )
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=8)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1, help="the train_encoder rule's threads: 1")
    ap.add_argument("--replicas", type=int, default=3, help="seeds per job (config seeds: 3)")
    ap.add_argument("--repeats", type=int, default=2, help="epochs per loop; the best is kept")
    ap.add_argument("--out", type=Path, help="also write the measurements to this JSON file")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the trainer does
    from crl_approx.models.data import gmm_pairs, lcgm_pairs

    gmm = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}
    lcgm = {"K": 8, "d_x": 16, "d_y": 16, "prior": "uniform", "mean_x": 6.0, "sigma_x": 0.9}
    lcgm |= {"mean_y": 3.5, "sigma_y": 1.0, "design_seed": 2610}
    seeds = list(range(args.replicas))
    cells = {
        "gmm D=8 samples": [gmm_pairs(gmm | {"n_train": args.n, "n_val": 1}, s) for s in seeds],
        "lcgm D=8": [
            lcgm_pairs(
                lcgm | {"n_train": args.n, "n_val": 1, "n_probe_fit": 1, "n_probe_test": 1}, s
            )
            for s in seeds
        ],
    }
    peak = matmul_rate(2048, 2048, 2048)
    print(
        f"device cpu, threads {args.threads}, {args.replicas} seeds per job, n {args.n}, "
        f"batch {args.batch}, D {args.dim}"
    )
    print(f"float32 matmul peak (2048^3, {args.threads} thread(s)): {peak:.1f} GFLOP/s\n")
    print(
        f"{'cell':<17}{'loop':<11}{'s/epoch':>9}{'model-samples/s':>17}{'GFLOP/s':>9}"
        f"{'of peak':>9}{'vs DL':>7}"
    )
    record = {"threads": args.threads, "replicas": args.replicas, "n": args.n, "batch": args.batch}
    record |= {"dim": args.dim, "torch": torch.__version__, "cpu": cpu_name()}
    record |= {"matmul_peak_gflops": peak, "rows": []}
    for name, pairs in cells.items():
        xs = torch.as_tensor(np.stack([p["x_train"] for p in pairs]), dtype=torch.float32)
        ys = torch.as_tensor(np.stack([p["y_train"] for p in pairs]), dtype=torch.float32)
        d_in = xs.shape[2]
        step_flops = flops_per_step(args.batch, TRAIN["width"], args.dim, d_in)
        loops = {
            "dataloader": lambda x=xs, y=ys: epoch_dataloader(x[0], y[0], args.dim, args.batch),
            "workflow": lambda x=xs, y=ys: epoch_workflow(x, y, args.dim, args.batch, seeds),
        }
        rates = {}
        for loop, fn in loops.items():
            fn()  # warm-up (allocator, lazy imports)
            seconds, steps, models = min(fn() for _ in range(args.repeats))
            rate = steps * args.batch * models / seconds
            gflops = steps * step_flops * models / seconds / 1e9
            rates[loop] = rate
            record["rows"].append(
                {"cell": name, "loop": loop, "s_per_epoch": seconds, "model_samples_per_s": rate}
                | {"of_peak": gflops / peak, "vs_dataloader": rate / rates["dataloader"]}
            )
            print(
                f"{name:<17}{loop:<11}{seconds:>9.3f}{rate:>17,.0f}{gflops:>9.1f}"
                f"{gflops / peak:>9.1%}{rate / rates['dataloader']:>7.2f}"
            )
    print("\nper-job start-up in a fresh interpreter (best of 3):")
    record["startup_s"] = startup(args.threads)
    for name, seconds in record["startup_s"].items():
        print(f"  {name:<40}{seconds:>6.2f} s")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"written {args.out}")


if __name__ == "__main__":
    main()
