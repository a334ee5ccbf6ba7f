"""What README prints of the tracked benchmark records (``benchmarks/*.json``), computed here so
that the template only prints: sums of job times, ratios, the cell a job's path names, counts.

Each function takes a record (a parsed JSON file; :class:`.readme.Run`'s job lookups pass the
default run's) and returns plain numbers and strings; tests/unit/test_readme_records.py checks
them on crafted records whose answers are known by hand.
"""

from __future__ import annotations

import fnmatch

#: the training and probe rules README's job-time table lists one by one (the rest are summed)
BIG_RULES = (
    "train_sample_size",
    "train_encoder",
    "probe_lcgm",
    "estimate_noise_exponent",
    "measure_calibration",
)
#: the sample-size study's rules (its job time is one line of the quick start)
STUDY_RULES = ("make_pool", "train_sample_size", "assemble_sample_size", "plot_sample_size")


def jobs(record: dict, rule: str, pattern: str = "*") -> list[float]:
    """The seconds of ``rule``'s jobs whose benchmark path matches ``rule/pattern``."""
    per = record["rules"].get(rule, {}).get("per_job", {})
    return [s for k, s in per.items() if fnmatch.fnmatch(k, f"{rule}/{pattern}")]


def jobs_s(record: dict, rule: str, pattern: str = "*") -> float:
    """The seconds of those jobs in all."""
    return sum(jobs(record, rule, pattern))


def job_s(record: dict, *rules: str, recorded_only: bool = False) -> float:
    """The rules' job seconds (``recorded_only``: skip rules the record does not hold, for an
    experiment newer than the record; else every rule must be there)."""
    timed = record.get("rules", {})
    return sum(timed[r]["job_s"] for r in rules if not recorded_only or r in timed)


def total_s(record: dict) -> float:
    """Every rule's job seconds in all."""
    return sum(r["job_s"] for r in record["rules"].values())


def share(rules: dict, *names: str) -> dict:
    """The named rules' jobs' own CPU time (each job's, crl_approx.runtime) and its share of every
    job's CPU time in ``rules`` (per rule, as :func:`.runrecord.job_times` gives them), with
    their count and wall-clock job time."""
    mine = [rules[r] for r in names if r in rules]
    cpu = sum(r["cpu_s"] for r in mine)
    total = sum(r["cpu_s"] for r in rules.values())
    return {
        "cpu_s": cpu,
        "total_cpu_s": total,
        "share": cpu / total if total else float("nan"),
        "jobs": sum(r["jobs"] for r in mine),
        "job_s": sum(r["job_s"] for r in mine),
    }


def cell(job: str, skip: int = 1) -> str:
    """A job's benchmark path without its first ``skip`` parts (the rule, the dataset), joined
    with ", ": ``train_sample_size/score~inner/pool~fresh`` → ``pool~fresh`` at ``skip=2``."""
    return ", ".join(job.split("/")[skip:])


def quickstart(record: dict, goal_s: float = 900) -> dict:
    """The default run's totals: job time, the study's share, the jobs' start-up CPU, and what
    dropping the study's budget axis (fresh at 2x and 4x) and its other learning rates saves;
    ``over_goal``: the wall time above issue 35's goal, 15 minutes on 2 cores."""
    total = total_s(record)
    study = job_s(record, *STUDY_RULES)
    axis = jobs_s(record, "train_sample_size", "*budget~[24]x*")
    lrs = jobs_s(record, "train_sample_size") - jobs_s(record, "train_sample_size", "*lr~0.001/*")
    startup = sum(r["startup_cpu_s"] for r in record["rules"].values())
    return {
        "total_s": total,
        "study_s": study,
        "without_study_s": total - study,
        "axis_s": axis,
        "other_lrs_s": lrs,
        "saves_s": axis + lrs,
        "startup_cpu_s": startup,
        "over_goal": record["wall_s"] > goal_s,
        "goal_min": round(goal_s / 60),
    }


#: issue 35's bar: a job within this many times its FLOP limit
FLOP_BAR = 1.5


def flop_floor(record: dict, bar: float = FLOP_BAR) -> dict | None:
    """What the run would cost with its training at the FLOP limit (issue 35). The matmul work the
    training jobs counted (steps and validation, :func:`crl_approx.runtime.count_flops`) at the
    host's one-thread peak (``limit_s``), the CPU those parts took (``cpu_s``) and their ratio;
    the run's wall time less the CPU the limit would save, spread over the cores (``at_limit_s``,
    and ``at_bar_s`` at ``bar`` times the limit): an estimate that keeps the run's other costs,
    its jobs' time off the CPU included, and assumes every core reaches the one-thread peak at
    once; and that work alone at the limit over the cores (``alone_s``), a floor for the run.
    What the run takes apart from that CPU (``rest_s``: the wall time less it over the cores, so
    ``at_limit_s`` is ``rest_s`` + ``alone_s``): every rule's CPU outside its counted parts
    (``outside_cpu_s``; ``outside``, the three largest by rule), the job time beyond the jobs'
    own CPU (``off_cpu_s``, where the record has both) and the cores' time no job held
    (``idle_s``): the three over the cores are ``rest_s``.
    None for a record without counts; an error for one whose training rules counted only in part
    (a rule with ``uncounted_jobs``, or a step loop's CPU without a count)."""
    rules = record.get("rules", {})
    counted = {k: r for k, r in rules.items() if r.get("flop")}
    if not counted or not record.get("peak_gflops") or "wall_s" not in record:
        return None
    partial = [
        k
        for k, r in rules.items()
        if r.get("uncounted_jobs") or ("steps" in r.get("phase_cpu_s", {}) and k not in counted)
    ]
    if partial:
        raise ValueError(f"the record's training rules counted their FLOPs in part: {partial}")
    flop = sum(sum(r["flop"].values()) for r in counted.values())
    limit = flop / (record["peak_gflops"] * 1e9)
    cpu = sum(r["flop_cpu_s"] for r in counted.values())
    cores = record["cores"]
    outside = {
        k: r.get("cpu_s", r.get("flop_cpu_s", 0.0)) - r.get("flop_cpu_s", 0.0)
        for k, r in rules.items()
    }
    top = sorted(outside.items(), key=lambda kv: -kv[1])[:3]
    off = record["job_s"] - record["job_cpu_s"] if {"job_s", "job_cpu_s"} <= record.keys() else None
    idle = cores * record["wall_s"] - record["job_s"] if off is not None else None
    return {
        "tflop": flop / 1e12,
        "limit_s": limit,
        "cpu_s": cpu,
        "ratio": cpu / limit,
        "bar": bar,
        "alone_s": limit / cores,
        "at_limit_s": record["wall_s"] - (cpu - limit) / cores,
        "at_bar_s": record["wall_s"] - (cpu - bar * limit) / cores,
        "rest_s": record["wall_s"] - cpu / cores,
        "outside_cpu_s": sum(outside.values()),
        "outside": [{"rule": k, "cpu_s": v} for k, v in top],
        "off_cpu_s": off,
        "idle_s": idle,
    }


def study_cost(record: dict) -> dict:
    """The sample-size study's jobs: count, the longest and its cell, the study's job time."""
    times = jobs(record, "train_sample_size")
    rule = record["rules"]["train_sample_size"]
    return {
        "jobs": len(times),
        "longest_s": max(times),
        "longest_cell": cell(rule["longest"], skip=2),
        "study_s": job_s(record, *STUDY_RULES),
        "train_s": rule["job_s"],
    }


def rule_rows(record: dict, big=BIG_RULES) -> dict:
    """README's job-time table: one row per rule of ``big`` (jobs, job time, longest job and its
    cell), one row summing every other rule, and the run's total job time."""
    rows = []
    for name in big:
        r = record["rules"][name]
        rows.append(
            {
                "rule": name,
                "jobs": r["jobs"],
                "job_s": r["job_s"],
                "longest_s": r["per_job"][r["longest"]],
                "longest_cell": r["longest"].split("/", 1)[1],
            }
        )
    rest = {k: v for k, v in record["rules"].items() if k not in big}
    per = {j: s for v in rest.values() for j, s in v["per_job"].items()}
    longest = max(per, key=per.get)
    other = {"rules": len(rest), "jobs": len(per), "job_s": sum(per.values())}
    other |= {"longest": longest.split("/")[0], "longest_s": per[longest]}
    return {"rows": rows, "other": other, "total_s": total_s(record)}


def digits_budget(record: dict) -> dict:
    """The digits budget check's job times at B and 2B and its cell counts."""
    b, b2 = record["runs"]["B"]["job_times"], record["runs"]["2B"]["job_times"]
    cells = record["cells"]
    return {
        "train_B_s": b["train_digits"]["job_s"],
        "train_2B_s": b2["train_digits"]["job_s"],
        "ratio": b2["train_digits"]["job_s"] / b["train_digits"]["job_s"],
        "all_B_s": sum(r["job_s"] for r in b.values()),
        "cells": len(cells),
        "moved": sum(bool(c["moved"]) for c in cells),
        "resolved": sum(bool(c["resolved"]) for c in cells),
        "beyond_tolerance": sum(not c["within_tolerance"] for c in cells),
    }


def run_ab(record: dict) -> dict:
    """benchmarks/run_ab.json read, for the wall time and for the jobs' own CPU: each side's runs,
    the largest range among one commit's runs (``spread``) against the difference of the sides'
    medians (``diff``, head − base; ``resolved`` when it is larger than the spread, which needs two
    runs a side), and per side the runs' job time beyond the jobs' own CPU with whether every head
    run's is below every base run's (``separated``; ``beyond_order``: below, above or overlap)."""
    runs, m = record["runs"], record["median"]
    if min(len(rs) for rs in runs.values()) < 2:
        raise ValueError("run_ab: one run a side has no spread; run it with --repeats 2 or more")
    out: dict = {}
    for key in ("wall_s", "job_cpu_s"):
        vals = {side: [r[key] for r in rs] for side, rs in runs.items()}
        spread = max(max(v) - min(v) for v in vals.values())
        diff = m["head"][key] - m["base"][key]
        out[key] = {"runs": vals, "spread": spread, "diff": diff, "resolved": abs(diff) > spread}
    beyond = {side: [r["job_s"] - r["job_cpu_s"] for r in rs] for side, rs in runs.items()}
    out["beyond"] = beyond
    out["separated"] = max(beyond["head"]) < min(beyond["base"])
    above = min(beyond["head"]) > max(beyond["base"])
    out["beyond_order"] = "below" if out["separated"] else "above" if above else "overlap"
    return out


def memory(record: dict, top: int = 8) -> dict | None:
    """A run's peak memory per rule against its ``mem_mb`` (crl_approx.runtime.MEMORY_LINE, via
    runrecord.job_times): the rules with a recorded peak, the ``top`` of those with a request by
    peak over it, the largest peak, the rules with a job above its request (a cluster would kill
    it) and those with no request; None for a record without peaks."""
    rows = [
        {"rule": rule, **{k: r.get(k) for k in ("peak_mib", "peak_job", "mem_mb", "jobs")}}
        | {"over_jobs": r.get("over_jobs", 0)}
        for rule, r in record["rules"].items()
        if r.get("peak_mib") is not None
    ]
    if not rows:
        return None
    asked = [row | {"share": row["peak_mib"] / row["mem_mb"]} for row in rows if row["mem_mb"]]
    asked.sort(key=lambda row: -row["share"])
    return {
        "rules": len(rows),
        "unrecorded": sorted(set(record["rules"]) - {row["rule"] for row in rows}),
        "unrequested": [row["rule"] for row in rows if not row["mem_mb"]],
        "top": asked[:top],
        "largest": max(rows, key=lambda row: row["peak_mib"]),
        "above": [row for row in asked if row["share"] > 1 or row["over_jobs"]],
    }
