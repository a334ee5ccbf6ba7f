"""Experiment W's LCGM floor against the step budget (issue 36): at which budget does a doubled
budget stop moving the widest cell?

The LCGM's verdicts are gated by the widest cell's doubled budget (docs/widths.md, the amendment
of 2026-12-05): no LCGM verdict is decided while twice the steps move that cell's held-out excess
by more than a tenth, resolvably. This measures how that check reads at larger budgets. It copies a
finished default run (``--run``: results and Snakemake's records, so nothing else reruns) and, for
each B of ``--steps``, reruns there only the widest LCGM cell (both towers at train.width, every
seed) at B and at its check, 2B (``widths.lcgm_steps`` = B, everything else equal: the same
seeds, initialisation and streams; the cosine schedule spans each run's own steps). Then it
prints and records per B: the cell's excess at B and at 2B (seeds' mean and sd), the drop paired
by seed with its Student-t interval, the drop as a share of the excess at B, and whether the gate
(:func:`crl_approx.analyses.widths.budget_moves`) reads "moves"; and the job CPU time per budget.

Not a timed test: it prints, and writes the record (``--out``, default
``benchmarks/widths_floor_budget.json``) with the commit it measured.

    python3 benchmarks/default_run.py                   # the default run, kept in /tmp
    python3 benchmarks/widths_floor_budget.py [--run /tmp/crl-default-run] [--steps 1500 3000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
CELL = "results/widths/lcgm/tower~both/width~{width}/budget~{budget}/seed~{seed}/metrics.json"
LOG = "logs/train_widths_widest/lcgm/budget~{budget}.log"  # the widest cell's job (1.12.0)


def rerun(work: Path, steps: int, cores: int, targets: list[str]) -> None:
    """The widest LCGM cell at ``steps`` and at its budget check, in ``work``."""
    (work / "budget.yaml").write_text(yaml.safe_dump({"widths": {"lcgm_steps": steps}}))
    cmd = ["snakemake", "--cores", str(cores), *targets, "--configfile", "budget.yaml"]
    subprocess.run(cmd, check=True, cwd=work, stdin=subprocess.DEVNULL)


def measure(work: Path, config: dict, steps: int) -> dict:
    """One budget's row: the excess at B and 2B per seed, the paired drop and the gate."""
    from crl_approx.analyses.widths import budget_moves
    from crl_approx.integrity import load_json
    from crl_approx.numerics import powerlaw
    from crl_approx.render.runrecord import job_cpu

    width, seeds = config["train"]["width"], config["seeds"]
    level = config["widths"]["ci_level"]

    def excess(budget):
        # a metrics file names its path relative to the run's folder (integrity's provenance)
        paths = [CELL.format(width=width, budget=budget, seed=s) for s in seeds]
        rows = [load_json(p) for p in paths]
        return np.array([r["heldout_excess"] for r in rows]), [r["steps"] for r in rows]

    one, n1 = excess("1x")
    two, n2 = excess("2x")
    diff = one - two
    drop = float(diff.mean())
    lo, hi = powerlaw.t_interval(drop, diff, level)
    row = {"widest_excess": float(one.mean()), "budget_drop_lo": lo, "budget_drop_hi": hi}
    cpu = {b: (job_cpu(work / LOG.format(budget=b)) or [float("nan")])[0] for b in ("1x", "2x")}
    return {
        "steps": steps,
        "steps_check": int(n2[0]),
        "steps_read": int(n1[0]),
        "excess": float(one.mean()),
        "excess_sd": float(one.std(ddof=1)),
        "excess_2x": float(two.mean()),
        "excess_2x_sd": float(two.std(ddof=1)),
        "drop": drop,
        "drop_lo": lo,
        "drop_hi": hi,
        "drop_share": drop / float(one.mean()),
        "drop_share_lo": lo / float(one.mean()),
        "drop_share_hi": hi / float(one.mean()),
        "moves": budget_moves(row),
        "cpu_s_1x": cpu["1x"],
        "cpu_s_2x": cpu["2x"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=Path("/tmp/crl-default-run"))
    ap.add_argument("--steps", type=int, nargs="+", default=[1500, 3000, 6000, 12000])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "widths_floor_budget.json")
    args = ap.parse_args()

    config = yaml.safe_load((args.run / "config" / "config.yaml").read_text())
    width, seeds = config["train"]["width"], config["seeds"]
    targets = [CELL.format(width=width, budget=b, seed=s) for b in ("1x", "2x") for s in seeds]
    rows = []
    with tempfile.TemporaryDirectory(prefix="crl-wfloor-") as tmp:
        work = Path(tmp) / "run"
        shutil.copytree(args.run, work, symlinks=True)
        for steps in args.steps:
            rerun(work, steps, args.cores, targets)
            os.chdir(work)
            rows.append(measure(work, config, steps))
            os.chdir(ROOT)
            r = rows[-1]
            print(
                f"B = {steps:>6}: excess {r['excess']:.3g} ± {r['excess_sd']:.2g}, at 2B "
                f"{r['excess_2x']:.3g} ± {r['excess_2x_sd']:.2g}; drop {r['drop_share']:+.1%} "
                f"[{r['drop_share_lo']:+.1%}, {r['drop_share_hi']:+.1%}] of the excess; "
                f"gate: {'moves' if r['moves'] else 'holds still'}; job CPU "
                f"{r['cpu_s_1x']:.0f} s + {r['cpu_s_2x']:.0f} s",
                flush=True,
            )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=args.run, capture_output=True, text=True
    ).stdout.strip()
    record = {
        "commit": head,
        "date": dt.date.today().isoformat(),
        "world": "lcgm",
        "cell": f"both towers at train.width = {width}, seeds {seeds}",
        "lcgm_batch": config["widths"]["lcgm_batch"],
        "default_steps": config["widths"]["lcgm_steps"],
        "budgets": rows,
    }
    args.out.write_text(json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
