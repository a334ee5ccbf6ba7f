"""GPU check of the batched trainer (run by hand on a machine with CUDA; prints JSON, asserts
nothing): is a seed's result independent of the seeds beside it on CUDA, how close are the CUDA
numbers to the CPU run's, and how long does a cell take.

    python3 benchmarks/gpu_check.py cpu_metrics.json > gpu_check.json

``cpu_metrics.json``: {"<cell>": [excess of seed 0, 1, 2], ...} from a CPU default run (optional).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

import torch

from crl_approx.models.data import gmm_pairs
from crl_approx.training import cells

GMM = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}
GMM |= {"quadrature_nodes": 200, "n_train": 100_000, "n_val": 20_000}
TRAIN = {"score": "inner", "width": 128, "depth": 3, "lr": 1e-3, "weight_decay": 1e-4}
TRAIN |= {"schedule": "cosine", "epochs": 20, "max_loss": 100.0, "batch_size": 512}
TRAIN |= {"population_nodes": 64, "population_steps": 6000}
D = 8


def cell(name, seeds, **kw):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    _, metrics, ckpts = cells.train_gmm(GMM, TRAIN, 0.5, D, seeds, threads=1, **kw)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {
        "cell": name,
        "seeds": seeds,
        "device": metrics[0]["device"],
        "wall_s": wall,
        "excess": [m["mlp_excess_risk"] for m in metrics],
        "f_last": [c["f"][-1] for c in ckpts],
    }


def main():
    cpu = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else {}
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "cells": []}
    pairs = {s: gmm_pairs(GMM, s) for s in (0, 1, 2)}
    val = {s: gmm_pairs(GMM, s, splits=("val",)) for s in (0, 1, 2)}
    runs = {}
    for name, kw in (
        ("samples", {"objective": "samples"}),
        ("fresh", {"objective": "samples", "fresh": True, "steps": 3900}),
        ("population", {"objective": "population"}),
    ):
        for seeds in ([0, 1, 2], [1]):
            data = None
            if name == "samples":
                data = [pairs[s] for s in seeds]
            elif name == "fresh":
                data = [val[s] for s in seeds]
            r = cell(name, seeds, pairs=data, **kw)
            runs[(name, tuple(seeds))] = r
        together, alone = runs[(name, (0, 1, 2))], runs[(name, (1,))]
        diff = float(abs(together["f_last"][1] - alone["f_last"][0]).max())
        out["cells"].append(
            {
                "cell": name,
                "device": together["device"],
                "wall_s_3_seeds": together["wall_s"],
                "wall_s_1_seed": alone["wall_s"],
                "excess_3_seeds": together["excess"],
                "seed1_alone_excess": alone["excess"][0],
                "seed1_bitwise_equal": together["excess"][1] == alone["excess"][0],
                "seed1_max_abs_diff_f": diff,
                "cpu_excess": cpu.get(name),
            }
        )
        print(json.dumps(out["cells"][-1]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
