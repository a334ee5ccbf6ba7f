"""What identifies a default run and its cost: the job times of its benchmark files and the
training fingerprint that tells README's own run from another host's (docs/development.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from .html import benchmark_rows
from .records import FLOP_BAR


def _log_lines(log_path: Path | str, pattern) -> list:
    """``pattern``'s matches in a job's log (crl_approx.runtime's lines); none for a missing log."""
    try:
        return pattern.findall(Path(log_path).read_text(errors="replace"))
    except OSError:
        return []


def job_cpu(log_path: Path | str) -> tuple[float, float] | None:
    """(CPU seconds, of which start-up) a job's log records at its end (crl_approx.runtime's
    ``CPU_LINE``); None for a log without one (a failed job, a rule without a Python script)."""
    from ..runtime import CPU_PATTERN

    found = _log_lines(log_path, CPU_PATTERN)
    return (float(found[-1][0]), float(found[-1][1])) if found else None


def job_memory(log_path: Path | str) -> tuple[float, int | None] | None:
    """(peak MiB, the rule's ``mem_mb`` or None) of a job's log (runtime.MEMORY_LINE)."""
    from ..runtime import MEMORY_PATTERN

    found = _log_lines(log_path, MEMORY_PATTERN)
    peak, declared = found[-1] if found else (None, None)
    return None if peak is None else (float(peak), None if declared == "none" else int(declared))


def job_phases(log_path: Path | str) -> dict[str, float]:
    """{phase: CPU seconds} a training job's log records at its end (crl_approx.runtime.phase:
    steps, validation, evaluation, metrics, write); empty for a job without phases."""
    from ..runtime import PHASE_PATTERN

    return {name: float(cpu) for name, cpu, _ in _log_lines(log_path, PHASE_PATTERN)}


def job_flops(log_path: Path | str) -> dict[str, int]:
    """{work: FLOPs} a training job's log records at its end (crl_approx.runtime.count_flops:
    the steps' and validation's matmul work); empty for a job that counted none."""
    from ..runtime import FLOP_PATTERN

    return {name: int(flop) for name, flop in _log_lines(log_path, FLOP_PATTERN)}


def job_steps(log_path: Path | str, kernels: bool = False) -> list[str]:
    """The steps a training job's log says it ran (crl_approx.runtime.STEP_LINE, once per job:
    ``compiled``, or ``python (why)``), or with ``kernels`` the kernels its sampled step ran
    with (KERNELS_LINE); empty for a job that trained nothing (ran no sampled step)."""
    from ..runtime import KERNELS_PATTERN, STEP_PATTERN

    pattern = KERNELS_PATTERN if kernels else STEP_PATTERN
    return [step.strip() for step in _log_lines(log_path, pattern)]


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
_ERROR = re.compile(r"^Error in rule (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_DONE = re.compile(r"^Finished jobid: (\d+)")


def occupancy(log_text: str, cores: int) -> dict:
    """How full a run kept its cores, from Snakemake's log of it (its time stamps, to the
    second): the seconds with at least ``cores`` jobs running, with fewer (and at least one) and
    with none; and the longest stretch of seconds with fewer, and the rules that ran in it."""
    import datetime as dt

    now, rule, failed, runs, started = None, None, False, {}, {}
    for line in log_text.splitlines():
        if m := _STAMP.match(line):
            now = dt.datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif m := _RULE.match(line):
            rule, failed = m.group(1), False
        elif m := _ERROR.match(line):  # a failed job ends where its error is logged
            rule, failed = None, True
        elif m := _JOBID.match(line):
            if rule is not None:
                started[m.group(1)], rule = (now, rule), None
            elif failed and m.group(1) in started:
                begin, name = started.pop(m.group(1))
                runs[m.group(1)], failed = (begin, now, name), False
        elif (m := _DONE.match(line)) and m.group(1) in started:
            begin, name = started.pop(m.group(1))
            runs[m.group(1)] = (begin, now, name)
    if not runs:
        return {"full_s": 0, "under_s": 0, "idle_s": 0, "stretch_s": 0, "stretch_rules": []}
    t0 = min(b for b, _, _ in runs.values())
    span = int((max(e for _, e, _ in runs.values()) - t0).total_seconds())
    busy = [[] for _ in range(span)]
    for begin, end, name in runs.values():
        for k in range(int((begin - t0).total_seconds()), int((end - t0).total_seconds())):
            busy[k].append(name)
    stretch, run = [], []
    for names in [*busy, [None] * cores]:  # a full second closes the last stretch
        if len(names) < cores:
            run.append(names)
        else:
            stretch, run = max(stretch, run, key=len), []
    return {
        "full_s": sum(len(names) >= cores for names in busy),
        "under_s": sum(0 < len(names) < cores for names in busy),
        "idle_s": sum(not names for names in busy),
        "stretch_s": len(stretch),
        "stretch_rules": sorted({n for names in stretch for n in names}),
    }


def job_times(root: Path | str) -> dict:
    """Per rule, from Snakemake's benchmark files under ``root``: jobs, job time (the sum of the
    ``s`` column), the longest job, and every job's time keyed by its benchmark path; and from
    each job's log (``logs/`` beside ``root``, the same path), the jobs' own CPU time
    (``cpu_s``, ``startup_cpu_s``, over ``cpu_jobs`` jobs), their largest peak memory
    (``peak_mib``, ``peak_job``) beside its ``mem_mb``, the jobs above their own (``over_jobs``),
    and, for training rules, its parts
    (``phase_cpu_s``), the matmul work its loops counted (``flop``) with the CPU of the steps and
    validation of the jobs that counted it (``flop_cpu_s``), and how many jobs ran a step loop
    without counting (``uncounted_jobs``, a log from before the counts)."""
    out = {}
    logs = Path(root).parent / "logs"
    for rule, jobs in benchmark_rows(root).groupby("rule"):
        per = dict(zip(jobs["job"], jobs["s"], strict=True))
        out[rule] = {"per_job": per, "jobs": len(per), "job_s": round(sum(per.values()), 2)}
        out[rule]["longest"] = max(per, key=per.get)
        cpu = [c for c in (job_cpu(logs / f"{job}.log") for job in per) if c is not None]
        out[rule] |= {
            "cpu_jobs": len(cpu),
            "cpu_s": round(sum(c[0] for c in cpu), 2),
            "startup_cpu_s": round(sum(c[1] for c in cpu), 2),
        }
        memory = {job: m for job in per if (m := job_memory(logs / f"{job}.log")) is not None}
        if memory:
            top = max(memory, key=lambda job: memory[job][0])
            out[rule] |= {"peak_mib": memory[top][0], "peak_job": top, "mem_mb": memory[top][1]}
            out[rule]["over_jobs"] = sum(1 for peak, req in memory.values() if req and peak > req)
        # per job: its parts' CPU, and the work it counted with the CPU of the parts that did it
        # (steps, validation); a job with a step loop but no count (a log from before the
        # counts) apart
        phases: dict[str, float] = {}
        flops: dict[str, int] = {}
        counted_cpu, uncounted = 0.0, 0
        for job in per:
            parts, counts = job_phases(logs / f"{job}.log"), job_flops(logs / f"{job}.log")
            for name, sec in parts.items():
                phases[name] = phases.get(name, 0.0) + sec
            for name, flop in counts.items():
                flops[name] = flops.get(name, 0) + flop
            if counts:
                counted_cpu += parts.get("steps", 0.0) + parts.get("validation", 0.0)
            elif "steps" in parts:
                uncounted += 1
        if phases:  # training rules: the jobs' CPU per part (the rest: start-up, set-up)
            out[rule]["phase_cpu_s"] = {k: round(v, 2) for k, v in phases.items()}
        if flops:
            out[rule] |= {"flop": flops, "flop_cpu_s": round(counted_cpu, 2)}
        if uncounted:
            out[rule]["uncounted_jobs"] = uncounted
    return out


#: the blocks whose numbers do not depend on torch training (quadrature, scipy's rank-D floor,
#: numpy's Monte Carlo) or read only the benchmark records: the default tier compares them exactly
#: even against a run of another machine (docs/development.md)
MACHINE_FREE = (
    "spectrum_notes",
    "spectrum_table",
    "rank_floor_notes",
    "noise_notes",
    "noise_table",
    "smoothness_spectra",
)


def training_fingerprint(results: Path) -> str:
    """12 hex digits of the sha256 of Table 1's MLP means at full precision: two runs with the same
    fingerprint trained bitwise the same (same code, config and machine); torch's CPU numerics
    differ between hosts, so a run of another machine has another fingerprint."""
    import hashlib

    t = pd.read_csv(results / "tables" / "table1.csv")
    t = t.sort_values(["objective", "D"])
    cols = ["mlp_excess_risk_mean", "mlp_l2_distance_mean"]
    text = ";".join(repr(float(v)) for v in t[cols].to_numpy().ravel())
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rendered_fingerprint(blocks: dict[str, str]) -> str | None:
    """The training fingerprint of the run the documents' ``blocks`` were rendered from."""
    body = blocks.get("run_fingerprint", "")
    m = re.search(r"fingerprint\s+`([0-9a-f]{12})`", body)
    return m[1] if m else None


#: README's tables of a run (:class:`.readme.Run` reads each on first use): name → (path under
#: results/, index column(s))
TABLES = {
    "table1": ("tables/table1.csv", ["objective", "D"]),
    "spectrum": ("gmm/spectrum.csv", "D"),
    "convergence": ("gmm/convergence.csv", None),
    "rank_floor": ("gmm/rank_floor.csv", "D"),
    "runs": ("tables/encoder_runs_gmm.csv", None),
    "sample_size": ("tables/sample_size.csv", None),
    "fits": ("tables/sample_size_fits.csv", None),
    "lcgm": ("tables/lcgm_probes.csv", "D"),
    "elbow": ("tables/lcgm_elbow.csv", "curve"),
    "noise": ("tables/noise_exponent.csv", None),
    "curve": ("tables/noise_curve.csv", None),
    "calibration": ("tables/calibration.csv", "group"),
    "calibration_points": ("tables/calibration_points.csv", None),
    "cosine": ("tables/cosine_ablation.csv", "D"),
    "dynamics": ("tables/dynamics.csv", None),
    "dynamics_lcgm": ("tables/dynamics_lcgm.csv", None),
    "smoothness_worlds": ("tables/smoothness_worlds.csv", None),
    "smoothness_eps": ("tables/smoothness_eps.csv", None),
    "smoothness_trained": ("tables/smoothness_trained.csv", None),
    "smoothness_curves": ("tables/smoothness_curves.csv", None),
    "smoothness_claims": ("tables/smoothness_claims.csv", None),
    "claims": ("tables/claims.csv", None),
}


def run_table(results: Path, name: str):
    """One of :data:`TABLES`, the LCGM design, or the training fingerprint of the run."""
    if name == "fingerprint":
        return training_fingerprint(results)
    if name == "design":
        return json.loads((results / "lcgm" / "design.json").read_text())
    if name not in TABLES:
        raise AttributeError(name)
    path, index = TABLES[name]
    table = pd.read_csv(results / path)
    return table if index is None else table.set_index(index)


def flop_cells(record: dict) -> list[dict]:
    """The FLOP-limit record's cells (benchmarks/flop_limit.json) with what README prints of
    each: the CPU seconds outside the step and validation loops, and the step loop's share of
    the job's CPU."""
    out = []
    for c in record["cells"]:
        phases = c["phase_cpu_s"]
        outside = c["job_cpu_s"] - phases["steps"] - phases["validation"]
        out.append(c | {"outside_s": outside, "step_share": phases["steps"] / c["job_cpu_s"]})
    return out


#: each FLOP-limit cell's step among the step-anatomy record's cells (the fresh stream's step is
#: the sampled step on the same shapes, its sampling aside)
ANATOMY_OF = {"gmm_fresh_D2": "gmm_samples_D2", "digits_K5_D5": "digits_samples_D5"}


def anatomy_cells(record: dict) -> list[dict]:
    """The step-anatomy record's cells (benchmarks/step_anatomy.json) with the step's time less
    its softmax's, in units of the step's limit (what a softmax that cost nothing would leave),
    and whether the cell's objective is the sampled one."""
    return [
        c
        | {"without_softmax": (c["step_ms"] - c["alone_ms"]["softmax"]) / c["limit_ms"]}
        | {"sampled": "_samples_" in c["cell"]}
        for c in record["cells"]
    ]


def job_floors(flop: dict, anatomy: dict, bar: float = FLOP_BAR) -> list[dict]:
    """Per FLOP-limit cell (benchmarks/flop_limit.json), an estimate of what no job of it goes
    below with the step's calls as they are, in units of its limit: its step's products alone at
    this host's speed for their shapes and layouts (benchmarks/step_anatomy.json; validation's
    products, forward only, taken at the same ratio), its step's AdamW call alone (over the
    steps' share of the limit: validation updates nothing), plus what importing torch costs: the
    least of the anatomy run's fresh interpreter and of every FLOP-limit job's own CPU outside
    its code's parts (start-up and the rest; each job imports torch there). The step's calls are
    the anatomy run's, the job's CPU and limit the FLOP-limit run's. ``left`` is what ``bar`` ×
    the limit (issue 35's, records.FLOP_BAR) leaves above the floor; ``spent`` what the job
    spends there now; ``cut`` the share of it the bar asks to go, None where this estimate of the
    floor is at or above the bar (``over``). The anatomy is of the step with ATen's kernels: a
    job that ran the fused kernels (its record's ``kernels``) has no floor here."""
    steps = {c["cell"]: c for c in anatomy["cells"]}
    outside = [c["startup_cpu_s"] + c["other_cpu_s"] for c in flop["cells"]]
    import_s = min([anatomy["torch_import_cpu_s"], *outside])
    out = []
    for c in flop["cells"]:
        step = steps.get(ANATOMY_OF.get(c["cell"], c["cell"]))
        if step is None or c.get("kernels") == "fused":
            continue
        start = import_s / c["limit_s"]
        share = c.get("step_limit_s", c["limit_s"]) / c["limit_s"]  # the steps' part of the limit
        products = step["alone_ms"]["products"] / step["limit_ms"]
        adamw = step["alone_ms"]["adamw"] / step["limit_ms"] * share
        floor = products + adamw + start
        job = c["job_cpu_s"] / c["limit_s"]
        over = floor >= bar
        cut = None if over else max(0.0, job - bar) / (job - floor) if job > floor else 0.0
        row = dict(cell=c["cell"], step=step["cell"], products=products, adamw=adamw, bar=bar)
        row |= dict(import_s=import_s, start=start, floor=floor, job=job, left=bar - floor)
        out.append(row | dict(spent=job - floor, over=over, cut=cut))
    return out
