"""Your run against a reference: a finished run's tables compared cell by cell with a committed
record of the default run (``benchmarks/reference_run.json``: its commit, host and tables).

    python3 -m crl_approx.render.reference compare --run .   # your finished run, from its folder
    python3 -m crl_approx.render.reference record --run /tmp/crl-default-run   # the record

A cell agrees when it is within the noise of its cell: for a column ``c`` beside a ``c_sd``
column, or ``c_mean`` beside ``c_sd`` (the sd over seeds: :func:`sd_column`),
|ours − reference| ≤ 3 × the larger of the two sds; every other
number (exact computations, and trained numbers where the table keeps no sd) within 1e-6 relative
(+1e-12 absolute), which on the reference's host and commit is the determinism guarantee and
elsewhere reads "differs beyond rounding; no seed sd". Text cells (labels, verdicts) must be equal.
The record holds every table of ``results/tables`` of at most :data:`MAX_BYTES` (the per-step
traces behind the dynamics and calibration tables are left out; the tables they feed are in),
without the columns that time jobs (:data:`TIMING`: the host's speed, not a result).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[4]
RECORD = REPO / "benchmarks" / "reference_run.json"
MAX_BYTES = 32 * 1024
#: columns that time a job (wall seconds): a measurement of the host, not a result; not recorded
TIMING = ("seconds",)
SEED_SDS = 3.0
RTOL, ATOL = 1e-6, 1e-12


def cpu_kernels() -> str:
    """:func:`crl_approx.training.host.cpu_kernels` (the kernel set and the CPU's flags)."""
    from ..training.host import cpu_kernels as kernels

    return kernels()


def record(run: Path) -> dict:
    """The reference record of a finished run: its commit and host (benchmarks/default_run.json
    of its clone, when there) and every small table, as {column: [values]}."""
    meta = {}
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=run, capture_output=True, text=True, check=False
    )
    checkout = head.stdout.strip() if head.returncode == 0 else None
    # the run's record: this checkout's benchmarks/default_run.json when it is of that run (the
    # benchmark writes it here), else the one the run's own checkout carries
    for bench in (
        REPO / "benchmarks" / "default_run.json",
        run / "benchmarks" / "default_run.json",
    ):
        raw = json.loads(bench.read_text()) if bench.exists() else {}
        if raw and (raw.get("commit") == checkout or bench.parent.parent == run):
            keys = ("commit", "date", "cpu", "cpu_kernels", "cores", "command")
            meta = {k: raw.get(k) for k in keys}
            break
    if checkout:  # the checkout the tables were last assembled at
        meta["checkout"] = checkout
    tables = {}
    for path in sorted((run / "results" / "tables").glob("*.csv")):
        if path.stat().st_size <= MAX_BYTES:
            df = pd.read_csv(path)
            keep = [c for c in df.columns if not any(t in c for t in TIMING)]
            tables[path.name] = {c: df[c].tolist() for c in keep}
    return {"run": meta, "rule": f"tables of at most {MAX_BYTES} bytes", "tables": tables}


def _number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def compare_cell(ours, ref, sd: float | None) -> tuple[bool, str]:
    """(agrees, basis) for one cell; ``sd``: the larger seed sd of the cell, or None."""
    a, b = _number(ours), _number(ref)
    if a is None or b is None or isinstance(ours, str) != isinstance(ref, str):
        same = (ours == ref) or (_missing(ours) and _missing(ref))
        return same, "text"
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b), "missing"
    if sd is not None and math.isfinite(sd):
        return abs(a - b) <= SEED_SDS * sd + ATOL, f"{SEED_SDS:g} seed sd"
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL), "rounding"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def sd_column(column: str, columns) -> str | None:
    """The seed-sd column beside ``column`` among ``columns``: ``c_sd`` for ``c``, or for a mean
    ``c_mean`` (the tables' usual naming); None where there is none."""
    names = [f"{column}_sd"]
    if column.endswith("_mean"):
        names.append(f"{column[: -len('_mean')]}_sd")
    return next((n for n in names if n in columns), None)


def compare(run: Path, reference: dict) -> list[dict]:
    """One row per cell that does not agree (table, column, row, ours, reference, basis), and
    one per table or column that is missing or has another number of rows."""
    out = []
    for name, ref_table in reference["tables"].items():
        path = run / "results" / "tables" / name
        if not path.exists():
            out.append({"table": name, "problem": "missing from your run"})
            continue
        ours = pd.read_csv(path)
        for column, ref_values in ref_table.items():
            if column not in ours.columns:
                out.append({"table": name, "column": column, "problem": "column missing"})
                continue
            values = ours[column].tolist()
            if len(values) != len(ref_values):
                out.append(
                    {
                        "table": name,
                        "column": column,
                        "problem": f"{len(values)} rows, reference {len(ref_values)}",
                    }
                )
                continue
            sd_col = sd_column(column, ours.columns)
            for row, (mine, theirs) in enumerate(zip(values, ref_values, strict=True)):
                sd = None
                if sd_col is not None and sd_col in ref_table:
                    sds = [_number(ours[sd_col].iloc[row]), _number(ref_table[sd_col][row])]
                    sds = [s for s in sds if s is not None and math.isfinite(s)]
                    sd = max(sds) if sds else None
                agrees, basis = compare_cell(mine, theirs, sd)
                if not agrees:
                    out.append(
                        {
                            "table": name,
                            "column": column,
                            "row": row,
                            "ours": mine,
                            "reference": theirs,
                            "basis": basis,
                        }
                    )
    return out


def cell_count(reference: dict) -> int:
    return sum(len(v) for t in reference["tables"].values() for v in t.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["compare", "record"])
    ap.add_argument("--run", type=Path, default=Path("."), help="a finished run's folder")
    ap.add_argument("--reference", type=Path, default=RECORD)
    args = ap.parse_args(argv)
    if args.action == "record":
        args.reference.write_text(json.dumps(record(args.run), indent=0) + "\n")
        print(f"written {args.reference}")
        return 0
    reference = json.loads(args.reference.read_text())
    misses = compare(args.run, reference)
    meta = reference["run"]
    print(
        f"reference: commit {str(meta.get('commit'))[:7]}, {meta.get('cpu')}, "
        f"{len(reference['tables'])} tables, {cell_count(reference)} cells"
    )
    here = cpu_kernels()
    print(f"this host: {here}; the reference's: {meta.get('cpu_kernels') or 'not recorded'}")
    if meta.get("cpu_kernels") != here:
        print(
            "another kernel set or CPU: trained numbers are bitwise reproducible on one host only;"
            " expect them to differ beyond rounding here (exact columns must still agree)"
        )
    for miss in misses:
        print("differs:", json.dumps(miss, default=str))
    verdict = "every cell agrees" if not misses else f"{len(misses)} cells or tables differ"
    print(verdict)
    return 0 if not misses else 1


if __name__ == "__main__":
    sys.exit(main())
