"""Training-loop speed: our loop versus a plain PyTorch DataLoader loop, measured side by side.

Trains the paper's model (two 3-layer ReLU MLPs of width 128, output D, batch 512, AdamW) for one
epoch over the same pairs three ways, in one process with one thread count:

  dataloader  TensorDataset + DataLoader(shuffle=True), loss.item() each step (the common idiom);
  ours        crl_approx.encoders: tensors resident, one permutation per epoch, contiguous slices,
              no per-step host sync (the loop the train_encoder rule runs);
  batched     R independent models (e.g. R seeds) stacked into one model with bmm, trained at once;
              counted in model-samples/s (R × samples/s). Not used by the workflow, which runs one
              job per (D, seed) for the DAG's sake; shown as what the hardware allows.

and measures the machine's float32 matmul peak (a large square matmul, same thread count) to turn
the achieved FLOP rate into a fraction of it. Prints a table; asserts nothing (timings are noisy).

    python3 benchmarks/train_speed.py [--n 100000] [--dim 8] [--threads 2] [--replicas 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from crl_approx.data import gmm_pairs
from crl_approx.encoders import TwoTower, infonce_batch, make_optimizer, samples_epoch

TAU = 0.5
GMM = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}


def flops_per_step(batch: int, width: int, dim: int, d_in: int = 1) -> float:
    """Forward + backward FLOPs of one step (backward ≈ 2 × forward), counting matmuls only."""
    tower = 2 * batch * (d_in * width + width * width + width * dim)
    scores = 2 * batch * batch * dim
    return 3.0 * (2 * tower + scores)


def matmul_rate(m: int, k: int, n: int, reps: int = 5, inner: int = 1) -> float:
    """Best float32 GFLOP/s of an (m × k) @ (k × n) matmul at the current thread count."""
    a = torch.randn(m, k)
    b = torch.randn(k, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b)
        best = min(best, (time.perf_counter() - t0) / inner)
    return 2 * m * k * n / best / 1e9


TRAIN = {"lr": 1e-3, "weight_decay": 1e-4, "schedule": "cosine"}


def make_model(dim, width, seed=0):
    """The paper's model with the trainer's own optimizer and schedule."""
    torch.manual_seed(seed)
    model = TwoTower(1, 1, dim, width, 3)
    opt, sched = make_optimizer(model, TRAIN, 10_000)
    return model, opt, sched


def epoch_dataloader(x, y, dim, width, batch):
    model, opt, sched = make_model(dim, width)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=batch, shuffle=True, drop_last=True
    )
    t0 = time.perf_counter()
    steps = 0
    for xb, yb in loader:
        loss = infonce_batch(model, xb, yb, TAU)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        loss.item()
        steps += 1
    return time.perf_counter() - t0, steps


def epoch_ours(x, y, dim, width, batch):
    """The train_encoder rule's own epoch (crl_approx.encoders.samples_epoch)."""
    model, opt, sched = make_model(dim, width)
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    float(samples_epoch(model, opt, sched, x, y, batch, TAU, gen))
    return time.perf_counter() - t0, x.shape[0] // batch


class BatchedTwoTower(torch.nn.Module):
    """R independent two-tower models as stacked weights: one bmm per layer for all of them."""

    def __init__(self, replicas, dim, width):
        super().__init__()
        shapes = [(1, width), (width, width), (width, dim)]

        def tower():
            ws = torch.nn.ParameterList()
            for fan_in, fan_out in shapes:
                bound = fan_in**-0.5
                ws.append(
                    torch.nn.Parameter(
                        torch.empty(replicas, fan_in, fan_out).uniform_(-bound, bound)
                    )
                )
                ws.append(
                    torch.nn.Parameter(torch.empty(replicas, 1, fan_out).uniform_(-bound, bound))
                )
            return ws

        self.f, self.g = tower(), tower()

    @staticmethod
    def _run(ws, h):
        for i in range(0, len(ws), 2):
            h = torch.baddbmm(ws[i + 1], h, ws[i])
            if i < len(ws) - 2:
                h = torch.relu(h)
        return h

    def loss(self, x, y):
        s = torch.bmm(self._run(self.f, x), self._run(self.g, y).transpose(1, 2)) / TAU
        r, b, _ = s.shape
        target = torch.arange(b).repeat(r)
        return TAU * F.cross_entropy(s.reshape(r * b, b), target, reduction="sum") / b


def epoch_batched(x, y, dim, width, batch, replicas):
    torch.manual_seed(0)
    model = BatchedTwoTower(replicas, dim, width)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4, fused=True)
    t0 = time.perf_counter()
    n_batches = x.shape[0] // batch
    # each replica sees its own permutation of the data (as separate seeds would)
    perms = torch.stack([torch.randperm(x.shape[0]) for _ in range(replicas)])
    xp, yp = x[perms], y[perms]  # (R, n, 1)
    total = torch.zeros(())
    for b in range(n_batches):
        sl = slice(b * batch, (b + 1) * batch)
        loss = model.loss(xp[:, sl], yp[:, sl])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
    float(total)
    return time.perf_counter() - t0, n_batches


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=8)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--flush-denormal", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2, help="epochs per loop; the best is kept")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(bool(args.flush_denormal))  # the trainer flushes (seed_everything)
    pairs = gmm_pairs({**GMM, "n_train": args.n, "n_val": 1}, 0)
    x = torch.as_tensor(pairs["x_train"], dtype=torch.float32)
    y = torch.as_tensor(pairs["y_train"], dtype=torch.float32)

    peak = matmul_rate(2048, 2048, 2048)
    # the model's largest GEMM, alone: an upper bound for any loop over this model
    layer = matmul_rate(args.batch, args.width, args.width, reps=20, inner=50)
    step_flops = flops_per_step(args.batch, args.width, args.dim)
    results = {}
    for name, fn in (
        ("dataloader", lambda: epoch_dataloader(x, y, args.dim, args.width, args.batch)),
        ("ours", lambda: epoch_ours(x, y, args.dim, args.width, args.batch)),
        (
            f"batched x{args.replicas}",
            lambda: epoch_batched(x, y, args.dim, args.width, args.batch, args.replicas),
        ),
    ):
        fn()  # warm-up (allocator, lazy imports)
        best = min(fn() for _ in range(args.repeats))
        models = args.replicas if name.startswith("batched") else 1
        seconds, steps = best
        results[name] = (
            seconds,
            steps * args.batch * models / seconds,
            steps * step_flops * models,
        )

    print(f"device cpu, threads {args.threads}, n {args.n}, D {args.dim}, batch {args.batch}")
    print(f"float32 matmul peak (2048^3, same threads): {peak:.1f} GFLOP/s")
    print(
        f"the model's hidden-layer GEMM alone ({args.batch}x{args.width}x{args.width}): "
        f"{layer:.1f} GFLOP/s = {layer / peak:.0%} of peak"
    )
    print(
        f"{'loop':<14}{'s/epoch':>9}{'model-samples/s':>17}{'GFLOP/s':>9}{'of peak':>9}{'vs DL':>7}"
    )
    base = results["dataloader"][1]
    for name, (seconds, rate, flops) in results.items():
        gflops = flops / seconds / 1e9
        print(
            f"{name:<14}{seconds:>9.3f}{rate:>17,.0f}{gflops:>9.1f}"
            f"{gflops / peak:>9.1%}{rate / base:>7.2f}"
        )


if __name__ == "__main__":
    main()
