"""What per-replica computation costs, measured side by side in one run.

Since 2026-12-01 every product and reduction of a stacked model runs on each replica's slice on
its own (``training.towers.per_replica``), and AdamW updates each replica as its own tensor, so a
seed's numbers do not depend on the seeds sharing its job on any host. This times one training
epoch of a default-run cell (the Gaussian mixture, ``samples``, D = 8 and D = 1, 3 seeds, 100k
pairs, batch 512, width 128) with that code and with the earlier batched computation (one
``baddbmm`` over all replicas, one fused AdamW call per stacked tensor: the code as it was,
restored by patching two functions), alternating, and prints the ratio of the best times. Both
run autograd's step (CRL_AUTOGRAD_STEP=1): the hand-written step (training/manual.py) computes
per replica by construction.
Asserts nothing.

    python3 benchmarks/replica_cost.py [--threads 1] [--repeats 3] [--n 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from crl_approx.models.data import gmm_pairs
from crl_approx.training import loops, optim, towers
from crl_approx.training.cells import train_gmm

GMM = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}
TRAIN = {
    "width": 128,
    "depth": 3,
    "lr": 1e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "epochs": 1,
    "batch_size": 512,
    "max_loss": 100.0,
}


def batched(fn, *tensors):
    """The earlier computation: ``fn`` on all replicas at once."""
    return fn(*tensors)


class BatchedAdamW(optim.FusedAdamW):
    """The earlier optimizer: one fused AdamW update per stacked tensor."""

    def __init__(self, params, lr_at, weight_decay: float):
        super().__init__(params, lr_at, weight_decay)
        self.steps = self.steps[: len(self.params)]

    @staticmethod
    def _replicas(tensors):
        return list(tensors)


def timed(dim: int, pairs, per_replica: bool) -> float:
    saved = towers.per_replica, loops.per_replica, optim.FusedAdamW
    os.environ["CRL_AUTOGRAD_STEP"] = "1"  # the autograd step, the one per_replica serves
    if not per_replica:
        towers.per_replica = loops.per_replica = batched
        optim.FusedAdamW = BatchedAdamW
    try:
        t0 = time.perf_counter()
        train_gmm(GMM | {"quadrature_nodes": 40}, TRAIN, 0.5, dim, [0, 1, 2], "samples", 1, pairs)
        return time.perf_counter() - t0
    finally:
        towers.per_replica, loops.per_replica, optim.FusedAdamW = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=100_000)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gmm = GMM | {"n_train": args.n, "n_val": 20_000, "quadrature_nodes": 40}
    pairs = [gmm_pairs(gmm, s) for s in (0, 1, 2)]
    print(f"one epoch, 3 seeds, {args.n} pairs, batch 512, width 128, {args.threads} thread(s)")
    print("| D | batched (s) | per replica (s) | ratio |")
    print("|---|---|---|---|")
    for dim in (8, 1):
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeats):
            for mode in (False, True):
                best[mode] = min(best[mode], timed(dim, pairs, mode))
        print(f"| {dim} | {best[False]:.2f} | {best[True]:.2f} | {best[True] / best[False]:.3f} |")


if __name__ == "__main__":
    main()
