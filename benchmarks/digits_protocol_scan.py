"""Experiment R's protocol scan (issue 26): one (pairing, D) cell of ``train_digits``, trained
outside Snakemake with a given learning rate, step budget and schedule, every seed of config.yaml,
and the number its verdict reads (held-out excess; MI bound for halves) at the early-stopping
checkpoint. It prints one line per cell; ``benchmarks/digits_protocol_scan.json`` holds the lines
of the scan that chose ``digits.lr``, ``halves_lr``, ``schedule`` and ``steps``
(docs/experiment_r.md).

Run from a folder that holds ``results/digits/images.npz`` (rule make_digits' output; its record
names that path):

    python3 benchmarks/digits_protocol_scan.py OUT PAIRING D[,D…] LR STEPS [SCHEDULE] [BATCH]
"""

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from crl_approx import integrity  # noqa: E402
from crl_approx.analyses.digits import evaluate_run  # noqa: E402
from crl_approx.training import digits as td  # noqa: E402

IMAGES = "results/digits/images.npz"


def main() -> None:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    out, pairing, dims = Path(sys.argv[1]), sys.argv[2], [int(x) for x in sys.argv[3].split(",")]
    lr, steps = float(sys.argv[4]), int(sys.argv[5])
    sched = sys.argv[6] if len(sys.argv) > 6 else "constant"
    batch = int(sys.argv[7]) if len(sys.argv) > 7 else cfg["digits"]["batch_size"]
    digits = cfg["digits"] | {"steps": steps, "halves_steps": steps, "batch_size": batch}
    keys = ("width", "depth", "weight_decay", "max_loss")
    train = {"score": "inner", "lr": lr, "schedule": sched} | {k: cfg["train"][k] for k in keys}
    data = integrity.load_npz(IMAGES)
    seeds = cfg["seeds"]
    for dim in dims:
        d = out / f"{pairing}_{dim}_{lr}_{steps}_{sched}_{batch}"
        d.mkdir(parents=True, exist_ok=True)
        o = SimpleNamespace(
            metrics=[str(d / f"m{s}.json") for s in seeds],
            checkpoints=[str(d / f"c{s}.npz") for s in seeds],
        )
        t0 = time.perf_counter()
        td.run(digits, train, cfg["tau"], pairing, dim, seeds, 1, IMAGES, o, device="cpu")
        wall = time.perf_counter() - t0
        values, bests = [], []
        for s in range(len(seeds)):
            m = json.loads(Path(o.metrics[s]).read_text())
            e = evaluate_run(m, integrity.load_npz(o.checkpoints[s]), data, digits, cfg["tau"])
            values.append(e["mi_bound"] if pairing == "halves" else e["heldout_excess"])
            bests.append(e["best_checkpoint"])
        print(
            f"{pairing} D={dim} lr={lr} steps={steps} {sched} b={batch} wall={wall:.1f}s "
            f"excess={np.mean(values):.4f}±{np.std(values, ddof=1):.4f} "
            f"per-seed={np.round(values, 4).tolist()} best={bests}",
            flush=True,
        )


if __name__ == "__main__":
    main()
