"""Experiment W's designs side by side (issue 36): which one decides, and what it costs.

The issue asks for a default run that decides every new prediction, with Experiment W at most a
tenth of the run's job CPU, shrinking steps or seeds before widths where the design cannot fit.
This copies a finished default run once per design (``--designs SCOPE:STEPS ...``: the budget
check's scope, ``widths.budget_check_scope``, and ``widths.lcgm_steps``), reruns there what the
two keys feed (W's LCGM cells and the assembly; the mixture's cells read neither and are reused,
as is every other experiment's output), and prints and records per design:

* per LCGM world: the floor, the widest cell's drop at twice the steps (its share of the floor)
  and the smallest ε read (``read_limit``), and how many ε of each ladder it lets be read;
* every verdict, with the registered rule's reading at the budget and at twice it;
* Experiment W's job CPU (its rules' jobs in the design's run: the rerun LCGM cells, the reused
  mixture cells, assembly and figure) and its share of the run's job CPU (the base run's other
  rules plus W's), the issue's cost measure.

The base run's own design is read as it stands (no rerun). Not a timed test: CPU time from the
jobs' own logs (``crl_approx.runtime``), the base run's other rules taken as they were measured.

    python3 benchmarks/default_run.py               # the base: a default run, kept in /tmp
    python3 benchmarks/widths_design.py [--run /tmp/crl-default-run] [--designs sweeps:500 ...]
                                        [--add]   # keep the record's other designs
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
TARGETS = ("results/tables/widths_verdicts.csv", "results/tables/widths_floors.csv")
#: Experiment W's rules (training, assembly, figure): its job CPU
W_RULES = ("train_widths", "train_widths_gmm", "train_widths_widest", "assemble_widths")
W_RULES += ("plot_widths",)


def design_of(config: dict) -> str:
    w = config["widths"]
    return f"{w.get('budget_check_scope', 'widest')}:{w['lcgm_steps']}"


def rerun(base: Path, work: Path, scope: str, steps: int, cores: int) -> None:
    """Copy ``base`` to ``work`` and rerun W's outputs there with the design's two keys."""
    shutil.copytree(base, work, symlinks=True)
    override = {"widths": {"budget_check_scope": scope, "lcgm_steps": steps}}
    (work / "design.yaml").write_text(yaml.safe_dump(override))
    cmd = ["snakemake", "--cores", str(cores), *TARGETS, "--configfile", "design.yaml"]
    subprocess.run(cmd, check=True, cwd=work, stdin=subprocess.DEVNULL)


def measure(run: Path, design: str, config: dict) -> dict:
    """A design's floors, ε read, verdicts and cost, from its run's tables and logs."""
    from crl_approx.render.runrecord import job_times

    t = run / "results" / "tables"
    floors = pd.read_csv(t / "widths_floors.csv")
    verdicts = pd.read_csv(t / "widths_verdicts.csv")
    w = config["widths"]
    worlds = []
    for f in floors[floors["world"].str.startswith("lcgm")].to_dict("records"):
        limit = f["read_limit"]
        worlds.append(
            {
                "world": f["world"],
                "floor": f["floor"],
                "drop_share": f["budget_drop"] / f["widest_excess"],
                "read_limit": limit,
                "eps_read": sum(e >= limit for e in w["eps"]),
                "eps_ladder": len(w["eps"]),
                "dim_eps_read": sum(e >= limit for e in w["dim_sweep"]["eps"]),
            }
        )
    cols = ["prediction", "verdict", "rule", "rule_2x", "value", "lo", "hi"]
    rows = verdicts[cols].astype(object).where(verdicts[cols].notna(), None).to_dict("records")
    rules = job_times(run / "benchmarks")
    total = sum(r["cpu_s"] for r in rules.values())
    w_cpu = sum(rules.get(r, {}).get("cpu_s", 0.0) for r in W_RULES)
    return {
        "design": design,
        "scope": design.split(":")[0],
        "steps": int(design.split(":")[1]),
        "worlds": worlds,
        "verdicts": rows,
        "decided": sorted(r["prediction"] for r in rows if r["verdict"] in ("holds", "fails")),
        "w_cpu_s": round(w_cpu, 1),
        "run_cpu_s": round(total, 1),
        "w_share": w_cpu / total,
        "w_jobs": sum(rules.get(r, {}).get("jobs", 0) for r in W_RULES),
    }


def report(m: dict) -> None:
    print(
        f"\n== {m['design']}: W {m['w_cpu_s']:.0f} s of {m['run_cpu_s']:.0f} s job CPU "
        f"({m['w_share']:.1%}), {m['w_jobs']} jobs; decided: {', '.join(m['decided']) or 'none'}"
    )
    for f in m["worlds"]:
        print(
            f"   {f['world']}: floor {f['floor']:.4g}, 2x drop {f['drop_share']:.0%}, smallest "
            f"ε read {f['read_limit']:.3g}: {f['eps_read']} of {f['eps_ladder']} levels"
        )
    for v in m["verdicts"]:
        print(f"   {v['prediction']}: {v['verdict']} (rule {v['rule']}; at 2x {v['rule_2x']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=Path("/tmp/crl-default-run"))
    ap.add_argument("--designs", nargs="+", default=["sweeps:500", "sweeps:1500"])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "widths_design.json")
    ap.add_argument(
        "--add", action="store_true", help="keep --out's designs of the same base run, add these"
    )
    args = ap.parse_args()

    config = yaml.safe_load((args.run / "config" / "config.yaml").read_text())
    base = design_of(config)
    rows = [measure(args.run, base, config)]
    report(rows[-1])
    for design in args.designs:
        scope, steps = design.split(":")
        with tempfile.TemporaryDirectory(prefix="crl-wdesign-") as tmp:
            work = Path(tmp) / "run"
            rerun(args.run, work, scope, int(steps), args.cores)
            c = yaml.safe_load((work / "config" / "config.yaml").read_text())
            c["widths"] |= {"budget_check_scope": scope, "lcgm_steps": int(steps)}
            rows.append(measure(work, design, c))
        report(rows[-1])
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=args.run, capture_output=True, text=True
    ).stdout.strip()
    if args.add and args.out.exists():  # the same base run's other designs, kept
        kept = json.loads(args.out.read_text())
        if kept["commit"] != head or kept["base"] != base:
            raise SystemExit(f"{args.out} measured another base run: cannot add to it")
        ran = {r["design"] for r in rows}
        rows += [r for r in kept["designs"] if r["design"] not in ran]
    rows.sort(key=lambda r: (r["design"] != base, r["scope"], r["steps"]))
    record = {
        "commit": head,
        "date": dt.date.today().isoformat(),
        "base": base,
        "cap": 0.1,
        "designs": rows,
    }
    args.out.write_text(json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
