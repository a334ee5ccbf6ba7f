"""What a change to each config key reruns, found from the rules themselves: every leaf key of a
finished run's configuration changed once (to a valid value), a dry run, and the jobs it plans.

Snakemake reruns a job whose params changed and everything that reads its outputs; a rule given
more of the config than it reads (a whole section) reruns on keys it never uses. The map this
module writes (``config/reruns.yaml``: per key, the rules that read it and the jobs a change
plans on the smoke run) is the declaration; ``tests/e2e/test_reruns.py`` dry-runs every key on a
finished smoke run and fails where the plan differs from it, or where a job reruns for anything
but the changed key (a params change, an input rewritten upstream, a new output).

    python3 -m crl_approx.config.reruns --run /tmp/crl-smoke-run --write
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from . import ConfigError, flat, load_schema, validate_config
from .schema import _subschema

REPO = Path(__file__).resolve().parents[4]
SMOKE = REPO / "config" / "smoke.yaml"
MAP = REPO / "config" / "reruns.yaml"

#: a job's reason, as Snakemake 9 prints it, → its kind
REASONS = {
    "Params have changed": "params",
    "Input files updated by another job": "upstream",
    "Missing output files": "new",
    "Set of input files has changed": "inputs",
}


#: keys that no change of their own makes valid, with the companion keys changed beside them
#: (the cross-key rules of crl_approx.config.rules name why)
COMPANIONS = {
    # train.default_objective must be among train.objectives
    "train.objectives": {"train": {"objectives": ["samples"], "default_objective": "samples"}},
    # 'uniform' or K numbers summing to 1 (smoke: K = 4)
    "lcgm.prior": {"lcgm": {"prior": [0.4, 0.2, 0.2, 0.2]}},
    # the fresh protocol of the learning-rate check needs the fresh stream
    "sample_size.fresh": {"sample_size": {"fresh": False, "lr_protocols": [4096]}},
}


def merged(*paths) -> dict:
    """config/config.yaml with each file deep-merged on top (as Snakemake merges configfiles)."""

    def merge(a, b):
        for k, v in b.items():
            if isinstance(v, dict) and isinstance(a.get(k), dict):
                merge(a[k], v)
            else:
                a[k] = v

    out: dict = {}
    for path in (REPO / "config" / "config.yaml", *paths):
        with open(path, encoding="utf-8") as fh:
            merge(out, yaml.safe_load(fh) or {})
    return out


def leaf_paths(config: dict) -> list[tuple]:
    """Every leaf key (a scalar or a list) of a nested config, as a tuple path (:func:`flat`'s
    dotted keys, split)."""
    return [tuple(key.split(".")) for key in flat(config)]


def _get(node, path):
    for part in path:
        node = node[part]
    return node


def candidates(value, schema_node: dict):
    """Other values for one key, in the order tried: the other enum values; a flipped bool; an
    integer ± 1 or doubled; a float × 1.25, × 0.8 or + 0.1; a list with its last item dropped,
    repeated changed, or changed."""
    if "enum" in schema_node:
        return [v for v in schema_node["enum"] if v != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, value * 2]
    if isinstance(value, float):
        return [value * 1.25, value * 0.8, value + 0.1]
    if isinstance(value, list):
        out = [value[:-1]] if len(value) > 1 else []
        if value and not isinstance(value[-1], dict | list):
            items = schema_node.get("items", {})
            for other in candidates(value[-1], items if isinstance(items, dict) else {}):
                out += [[*value, other], [*value[:-1], other]]
        return out
    if isinstance(value, str):
        return [value + "x"]
    return []


def perturbation(config: dict, schema: dict, path) -> dict | None:
    """The smallest override of one key that the workflow accepts: {section: {key: value}}
    nested as the config is, or None where no candidate validates."""
    if ".".join(path) in COMPANIONS:
        return COMPANIONS[".".join(path)]
    value = _get(config, path)
    for other in candidates(value, _subschema(schema, path)):
        trial = copy.deepcopy(config)
        _get(trial, path[:-1])[path[-1]] = other
        try:
            validate_config(trial, schema, memory=64 << 30)
        except ConfigError:
            continue
        override: dict = {}
        node = override
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = other
        return override
    return None


def planned_jobs(dry_run_output: str) -> list[tuple[str, str]]:
    """The (rule, reason kind) of every job a dry run plans, grouped jobs included (indented
    under "Group job"); a reason outside :data:`REASONS` is kept as its text."""
    jobs: list[list[str]] = []
    for line in dry_run_output.splitlines():
        rule = re.match(r"^\s*(?:local)?rule (\w+):$", line)
        if rule:
            jobs.append([rule.group(1), ""])
            continue
        reason = re.match(r"^\s+reason: (.+)$", line)
        if reason and jobs and not jobs[-1][1]:
            jobs[-1][1] = reason.group(1)
    out = []
    for rule, text in jobs:
        kinds = sorted({kind for prefix, kind in REASONS.items() if prefix in text})
        out.append((rule, "+".join(kinds) or text))
    return out


def summarise(jobs: list[tuple[str, str]]) -> dict:
    """One key's entry of the map: the rules whose params read it, the number of jobs and the
    rules a change reruns (its readers and everything downstream of them: what depends on it)."""
    readers = sorted({rule for rule, kind in jobs if "params" in kind.split("+")})
    rerun = sorted({rule for rule, _ in jobs if rule != "all"})
    return {"reads": readers, "jobs": len([r for r, _ in jobs if r != "all"]), "reruns": rerun}


def dry_run(run_dir: Path, override: dict) -> tuple[int, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump(override, fh)
    # the run's own checkout where it is one (a clone's inputs name its own files), else this one
    snakefile = run_dir / "Snakefile" if (run_dir / "Snakefile").exists() else REPO / "Snakefile"
    cmd = ["snakemake", "-s", str(snakefile), "--directory", str(run_dir), "-n"]
    cmd += ["--nolock", "--configfile", str(SMOKE), fh.name]
    proc = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600
    )
    os.unlink(fh.name)
    return proc.returncode, proc.stdout + proc.stderr


def settle_times(run_dir: Path) -> None:
    """Give every file the run's jobs wrote (``results/``, their benchmark files and logs) one
    modification time, the newest of them.
    A key can bring an input into a job (widths.gmm_objective: the mixture's sampled pairs into
    the width sweep) that the run happened to write after the job; Snakemake then names only
    "Updated input files" (it checks times before params), and the survey would depend on the
    order the run wrote its files (CI once differed from the committed map on that). With one
    time nothing is newer than anything: the rerun reasons are the key's. The run stays complete
    (nothing is older than its inputs)."""
    run_dir = Path(run_dir)
    # a job's oldest output, as Snakemake reads it, includes its benchmark file (and its log)
    files = [p for p in (run_dir / "results").rglob("*") if p.is_file()]
    files += [p for p in (run_dir / "benchmarks").rglob("*.tsv") if p.is_file()]
    files += [p for p in (run_dir / "logs").rglob("*") if p.is_file()]
    if not files:
        return
    newest = max(p.stat().st_mtime_ns for p in files)
    for p in files:
        os.utime(p, ns=(newest, newest))


def survey(run_dir: Path, workers: int = 2) -> dict[str, dict]:
    """Every leaf key of the smoke configuration changed once on the finished run ``run_dir``:
    {dotted key: {"reads", "jobs", "override", "planned": [(rule, reason kind)]}} (a key that no
    valid value can change: {"override": None}). The run's files get one modification time first
    (:func:`settle_times`)."""
    settle_times(run_dir)
    schema = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    config = validate_config(merged(SMOKE), schema, memory=64 << 30)
    todo = {".".join(p): perturbation(config, schema, p) for p in leaf_paths(config)}

    def one(item):
        key, override = item
        if override is None:
            return key, {"override": None}
        rc, out = dry_run(run_dir, override)
        if rc != 0:
            return key, {"override": override, "error": out[-2000:]}
        jobs = planned_jobs(out) if "Nothing to be done" not in out else []
        return key, {"override": override, "planned": jobs, **summarise(jobs)}

    with ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, todo.items()))


def as_map(result: dict[str, dict]) -> dict:
    """The committed map's form: {key: {"reads": [...], "jobs": n, "reruns": [...]}}."""
    return {
        k: {"reads": v.get("reads"), "jobs": v.get("jobs"), "reruns": v.get("reruns")}
        for k, v in result.items()
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="a finished smoke run's folder")
    ap.add_argument("--write", action="store_true", help=f"write {MAP.relative_to(REPO)}")
    args = ap.parse_args(argv)
    result = survey(args.run)
    bad = {k: v for k, v in result.items() if "error" in v or v["override"] is None}
    text = (
        "# What a change to each config key reruns on a finished smoke run (config/smoke.yaml):\n"
        "# the rules whose params read the key, the jobs a dry run then plans and their rules\n"
        "# (what depends on the key: render/provenance.py's keys). Generated by\n"
        "# `python3 -m crl_approx.config.reruns --run DIR --write`; tests/e2e/test_reruns.py\n"
        "# fails where a dry run differs from it.\n"
        + yaml.safe_dump(as_map(result), sort_keys=True, width=100)
    )
    if args.write:
        MAP.write_text(text)
    print(json.dumps({k: v for k, v in bad.items()}, indent=1) if bad else "every key changed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
