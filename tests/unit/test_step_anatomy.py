"""benchmarks/step_anatomy.py (where a step's time goes) and what README draws from its record:
the products it records from one real step (the compiled step's calls from C++ included) do
exactly the work flop_limit.py counts less what no step computes, in closed form; the job floors
add up as stated."""

import math
import subprocess
import sys
from itertools import pairwise

import pytest
import torch

from conftest import REPO, SNAKEMAKE

sys.path.insert(0, str(REPO / "benchmarks"))

import step_anatomy


@pytest.fixture
def job_settings():
    """build_step sets a job's thread count and denormal flushing on this process: put back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
    torch.set_flush_denormal(False)


def closed_form(points: int, d_x: int, d_y: int, dim: int, width: int = 128, depth: int = 3):
    """One replica's step products, written out: per tower, the forward of each layer, the
    weight gradient of each, the input gradient of every layer but the first; the score
    S = f gᵀ (points × points × D) and its two gradients."""

    def tower(d_in):
        dims = [d_in] + [width] * (depth - 1) + [dim]
        layers = list(pairwise(dims))
        fwd = sum(2 * points * i * o for i, o in layers)
        return fwd + fwd + (fwd - 2 * points * d_in * width)

    return tower(d_x) + tower(d_y) + 3 * 2 * points * points * dim


@pytest.mark.parametrize(
    "cell",
    [
        "gmm_samples_D2",
        "gmm_cosine_samples_D2",
        "lcgm_samples_D8",
        "digits_samples_D5",
        "gmm_population_D2",
        "gmm_cosine_population_D2",
    ],
)
def test_a_steps_recorded_products_are_its_work_in_closed_form(cell, job_settings):
    import yaml

    from crl_approx.training import native
    from crl_approx.training.loops import run_steps

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    model, opt, step_loss, got_shape = step_anatomy.build_step(cell, 5)
    points, d_x, d_y, dim = got_shape
    world = cell.split("_")[0]
    d_in = {"lcgm": (cfg["lcgm"]["d_x"], cfg["lcgm"]["d_y"]), "digits": (64, 64)}.get(world, (1, 1))
    batch = {"digits": cfg["digits"]["batch_size"]}.get(world, cfg["train"]["batch_size"])
    if "population" in cell:
        batch = 2 * cfg["train"]["population_nodes"]
    assert got_shape == (batch, *d_in, int(cell[-1]))
    # the step the jobs run: compiled where it builds (the recorder sees its calls from C++)
    assert (step_loss.weights.native is not None) == (native.module() is not None)
    with step_anatomy.once_per_run_muted(step_loss):
        calls = step_anatomy.one_step(
            lambda k: step_anatomy.record_calls(lambda: run_steps(model, opt, step_loss, k))
        )
    flops = sum(
        step_anatomy.product_flops(name, args)
        for name, _, args, _ in calls
        if step_anatomy.kind_of(name) == "products"
    )
    replicas = len(cfg["seeds"])
    assert flops == replicas * closed_form(points, d_x, d_y, dim)
    counted, unneeded = step_anatomy.work_flops(got_shape, replicas, 128, 3)
    assert flops == counted - unneeded
    # one softmax per replica; one AdamW call for all (a list of every replica's own tensors)
    names = [name for name, *_ in calls]
    assert names.count("aten._softmax.default") == replicas
    assert names.count("aten._fused_adamw_.default") == 1


@pytest.mark.parametrize("cell", ["gmm_samples_D2", "gmm_population_D2"])
def test_one_step_is_the_loops_body_without_what_a_run_does_once(cell, job_settings):
    """The calls one_step finds are those of the loop's body issued by hand (the step, the
    optimiser's update, the loss total's sum): not the ~100 a run makes when it returns (the
    weights copied into the model), nor the total's set-up and mean."""
    from crl_approx.training.loops import run_steps

    model, opt, step_loss, _ = step_anatomy.build_step(cell, 10)
    run_steps(model, opt, step_loss, 2)  # past the first batch's draw of an epoch's order

    def record(k):
        return step_anatomy.record_calls(lambda: run_steps(model, opt, step_loss, k))

    with step_anatomy.once_per_run_muted(step_loss):
        found = [name for name, *_ in step_anatomy.one_step(record)]
    total = torch.zeros(model.replicas)

    def body():
        loss = step_loss()
        opt.update(step_loss.weights.grads)
        total.add_(loss.detach())

    assert found == [name for name, *_ in step_anatomy.record_calls(body)]
    assert len(record(1)) > len(found) + 50  # unmuted: the copy into the model as well


def test_one_step_refuses_runs_that_do_not_add_a_step():
    def calls(*names):
        return [(n, None, (), {}) for n in names]

    runs = {0: calls("zeros", "div"), 1: calls("zeros", "a", "b", "div")}
    assert [c[0] for c in step_anatomy.one_step(runs.get)] == ["a", "b"]
    runs[1] = calls("zeros", "a", "b", "mean")
    with pytest.raises(SystemExit, match="one step's calls not found"):
        step_anatomy.one_step(runs.get)
    # a step that begins as the tail does could be split two ways: refused, not guessed
    runs = {0: calls("zeros", "div"), 1: calls("zeros", "div", "div")}
    with pytest.raises(SystemExit, match="one step's calls not found"):
        step_anatomy.one_step(runs.get)


def test_a_recorded_call_keeps_its_arguments_as_they_were():
    """An in-place call's arguments are copied before it runs, strides kept."""
    a = torch.arange(6.0).reshape(2, 3).t()  # a transposed view

    def f():
        a.mul_(2.0)

    ((name, _, args, _),) = step_anatomy.record_calls(f)
    assert name.startswith("aten.mul_") and args[0].stride() == a.stride()
    assert torch.equal(args[0], torch.arange(6.0).reshape(2, 3).t())
    assert torch.equal(a, 2 * args[0])


def test_the_job_floors_add_the_products_adamw_and_the_start():
    """A job of 10 s limit (8 s of it its steps', the rest validation's) and 18 s CPU (1.8×)
    whose step's products alone are 1.1× their limit (2.2 of 2 ms) and AdamW alone 0.05× (another
    run's ratios, taken as they are; AdamW only over the steps' 0.8 of the limit: 0.04×): a 2 s
    import (0.2×; less than the job's own 2.5 s outside its parts) makes a floor of 1.34×,
    leaving 0.16× below 1.5× where the job spends 0.46×: the bar asks to cut 0.3 of 0.46. Where
    any job of the run spent less outside its code than the import measured apart, that is the
    import (each job imports torch there); a job under the bar is asked to cut nothing, and one
    under its floor (an estimate) too; a floor at or above the bar is marked, with no cut."""
    from crl_approx.render.runrecord import job_floors

    cell = {"cell": "gmm_fresh_D2", "limit_s": 10.0, "step_limit_s": 8.0, "job_cpu_s": 18.0}
    cell |= {"startup_cpu_s": 0.5, "other_cpu_s": 2.0}
    flop = {"peak_gflops": 40.0, "cells": [cell]}
    anatomy = {"peak_gflops": 50.0, "torch_import_cpu_s": 2.0}
    step = {"cell": "gmm_samples_D2", "limit_ms": 2.0}
    anatomy["cells"] = [step | {"alone_ms": {"products": 2.2, "adamw": 0.1}}]
    (row,) = job_floors(flop, anatomy)
    assert row["step"] == "gmm_samples_D2" and math.isclose(row["start"], 0.2)
    assert math.isclose(row["products"], 1.1) and math.isclose(row["adamw"], 0.04)
    assert math.isclose(row["floor"], 1.34) and math.isclose(row["left"], 0.16)
    assert not row["over"] and row["import_s"] == 2.0
    assert math.isclose(row["job"], 1.8) and math.isclose(row["spent"], 0.46)
    assert math.isclose(row["cut"], 0.3 / 0.46) and row["bar"] == 1.5
    # another job of the run spent 1 s outside its code: the import costs at most that, for all
    other = {**cell, "cell": "other", "startup_cpu_s": 0.2, "other_cpu_s": 0.8}
    (row,) = job_floors({**flop, "cells": [cell, other]}, anatomy)
    assert math.isclose(row["start"], 0.1) and math.isclose(row["floor"], 1.24)
    (row,) = job_floors({**flop, "cells": [cell | {"job_cpu_s": 14.0}]}, anatomy)
    assert row["cut"] == 0.0
    (row,) = job_floors({**flop, "cells": [cell | {"job_cpu_s": 13.0}]}, anatomy)
    assert row["spent"] < 0 and row["cut"] == 0.0
    slow = {**anatomy, "cells": [step | {"alone_ms": {"products": 2.6, "adamw": 0.1}}]}
    (row,) = job_floors(flop, slow)  # 1.3 + 0.04 + 0.2 = 1.54: over the bar, no cut reaches it
    assert row["over"] and row["cut"] is None and math.isclose(row["left"], -0.04)
    (row,) = job_floors(flop, slow, bar=1.6)
    assert not row["over"] and math.isclose(row["cut"], 0.2 / 0.26)
    assert job_floors({"peak_gflops": 1.0, "cells": [{"cell": "other"} | other]}, anatomy) == []
    # the anatomy is of ATen's step: a job that ran the fused kernels has no floor here
    assert job_floors({**flop, "cells": [cell | {"kernels": "fused"}]}, anatomy) == []
    assert len(job_floors({**flop, "cells": [cell | {"kernels": "aten"}]}, anatomy)) == 1


def test_a_jobs_log_says_which_step_it_ran(tmp_path):
    from crl_approx.render.runrecord import job_steps
    from crl_approx.runtime import STEP_LINE

    log = tmp_path / "job.log"
    log.write_text(f"a\n2026-12-06 INFO {STEP_LINE.format(step='python (no ninja)')}\nb\n")
    assert job_steps(log) == ["python (no ninja)"]
    (tmp_path / "none.log").write_text("job cpu_s=1.0 startup_cpu_s=0.1\n")
    assert job_steps(tmp_path / "none.log") == [] and job_steps(tmp_path / "missing") == []


def snakemake_log(events) -> str:
    """A Snakemake log of (second, what, jobid, rule) events in its own format (Snakemake 9:
    local rules, checkpoints; a failed job's error block)."""
    lines = []
    for sec, what, jobid, rule in events:
        lines.append(f"[Sun Dec  6 20:00:{sec:02d} 2026]")
        if what in ("rule", "localrule", "localcheckpoint"):
            lines += [f"{what} {rule}:", f"    output: results/{rule}.txt", f"    jobid: {jobid}"]
            lines.append("    resources: tmpdir=/tmp")
        elif what == "error":
            lines += [f"Error in rule {rule}:", "    message: None", f"    jobid: {jobid}"]
        else:
            lines += [f"Finished jobid: {jobid} (Rule: {rule})", "1 of 4 steps (25%) done"]
    return "\n".join(lines) + "\n"


def test_occupancy_counts_the_seconds_each_number_of_jobs_ran():
    """Two cores: a from 0 to 10 s, b from 0 to 4 s, c (a checkpoint) from 6 to 12 s, d from 14
    s until its error at 15 s: both cores busy in seconds 0-3 and 6-9 (8 s); one job in 4-5,
    10-11 and 14 (5 s); none in 12-13 (2 s); the longest stretch short of two jobs is 10-14
    (5 s: c, nothing, d)."""
    from crl_approx.render.runrecord import occupancy

    log = snakemake_log(
        [
            (0, "localrule", 1, "a"),
            (0, "rule", 2, "b"),
            (4, "done", 2, "b"),
            (6, "localcheckpoint", 3, "c"),
            (10, "done", 1, "a"),
            (12, "done", 3, "c"),
            (14, "rule", 4, "d"),
            (15, "error", 4, "d"),
        ]
    )
    got = occupancy(log, cores=2)
    assert (got["full_s"], got["under_s"], got["idle_s"]) == (8, 5, 2)
    assert got["stretch_s"] == 5 and got["stretch_rules"] == ["c", "d"]
    assert occupancy(log, cores=1)["full_s"] == 13 and occupancy("", 2)["full_s"] == 0


def test_occupancy_reads_a_real_snakemake_log(tmp_path):
    """Snakemake itself, two cores: a local rule of 1 s beside a checkpoint that fails after 2 s
    (-k). The stamps are to the second, so the run spans 2 or 3 of them, at least one with both
    jobs running (the failed checkpoint counts until its error is logged), none idle."""
    from crl_approx.render.runrecord import occupancy

    (tmp_path / "Snakefile").write_text(
        "rule all:\n    input: 'a.txt', 'b.txt'\n"
        "rule a:\n    output: 'a.txt'\n    shell: 'sleep 1; touch {output}'\n"
        "checkpoint b:\n    output: 'b.txt'\n    shell: 'sleep 2; exit 1'\n"
    )
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "2", "-k", "--nolock"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and "Error in rule b" in proc.stderr + proc.stdout
    got = occupancy(proc.stderr + proc.stdout, cores=2)
    assert got["full_s"] >= 1 and got["full_s"] + got["under_s"] in (2, 3)
    assert got["idle_s"] == 0 and set(got["stretch_rules"]) <= {"a", "b"}


def test_a_narrow_product_has_a_side_of_at_most_eight():
    """The score product of a D = 2 step and a 1-d input's first layer are narrow; the hidden
    128-wide layers and the LCGM's 16-d first layer are not (addmm's bias is not a side)."""
    import torch

    e = torch.empty
    assert step_anatomy.is_narrow("aten.mm.default", (e(512, 2), e(2, 512)))
    assert step_anatomy.is_narrow("aten.addmm.default", (e(512), e(512, 1), e(1, 128)))
    assert step_anatomy.is_narrow("aten.mm.default", (e(8, 512), e(512, 128)))
    assert not step_anatomy.is_narrow("aten.mm.default", (e(512, 128), e(128, 128)))
    assert not step_anatomy.is_narrow("aten.addmm.default", (e(2), e(512, 16), e(16, 128)))


def test_a_row_splits_the_step_and_refuses_a_wrong_count():
    """One replica of a 1-D-input tower pair: a step of 10 ms whose products took 4 ms alone,
    softmax 1, AdamW 0.5 and its other calls 2.5 leaves a rest of 4.5 ms, 2 ms of it beyond the
    calls alone; a product count off the work model by one FLOP stops the benchmark."""
    shape, width, depth = (8, 1, 1, 2), 4, 3
    counted, unneeded = step_anatomy.work_flops(shape, 1, width, depth)
    meas = {"cell": "x", "compiled": True, "calls": 9, "counts": {}, "call_us": 3.0}
    meas |= {"shape": shape, "replicas": 1, "step_ms": 10.0, "rest_top_ms": {"aten.sum": 1.0}}
    meas["alone_ms"] = {"products": 4.0, "softmax": 1.0, "adamw": 0.5, "rest": 2.5}
    meas["product_flops"] = int(counted - unneeded)
    meas["narrow"] = {"ms": 1.0, "flops": meas["product_flops"] // 8}
    peak = counted / 5e-3  # the limit is 5 ms
    row = step_anatomy.row_of(meas, peak, width, depth)
    assert row["narrow_time_share"] == 0.25 and math.isclose(
        row["narrow_flop_share"], 0.125, abs_tol=1e-4
    )
    assert math.isclose(row["limit_ms"], 5.0) and math.isclose(row["rest_ms"], 4.5)
    assert math.isclose(row["rest_alone_ms"], 2.5) and math.isclose(row["beyond_ms"], 2.0)
    assert row["products_over_limit"] == 0.8 and row["step_over_limit"] == 2.0
    assert set(row["alone_ms"]) == {"products", "softmax", "adamw"}
    with pytest.raises(SystemExit, match="first-layer input gradients"):
        step_anatomy.row_of(meas | {"product_flops": meas["product_flops"] + 1}, peak, width, depth)
