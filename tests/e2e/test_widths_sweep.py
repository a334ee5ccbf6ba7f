"""Experiment W's sweep jobs end to end (1.12.0: one job trains every narrower width of one
tower on one world): a width's numbers are those of a run whose grid holds that width alone, and
a sweep killed after its first width is rerun whole, to the uninterrupted run's numbers."""

import os
import signal
import subprocess
import time

import pytest
import yaml

from conftest import REPO, SNAKEMAKE, run_snakemake, stable_metrics

pytestmark = pytest.mark.e2e
SMOKE = str(REPO / "config" / "smoke.yaml")
CELL = "results/widths/lcgm/tower~f/width~{}/budget~1x/seed~0"


def check(proc):
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def _args(tmp_path, grid, name):
    """Snakemake's arguments for the LCGM f sweep on ``grid`` (steps long enough to kill)."""
    override = tmp_path / f"{name}.yaml"
    widths = {"grid": {"lcgm": grid, "gmm": [8]}, "lcgm_steps": 600}
    override.write_text(yaml.safe_dump({"widths": widths}))
    targets = [f"{CELL.format(w)}/metrics.json" for w in grid]
    return ["--cores", "1", "--configfile", SMOKE, str(override), "--", *targets]


def _numbers(path):
    """A cell's metrics without wall-clock fields and without provenance (which names the job's
    params: another grid is another job)."""
    data = stable_metrics(path)
    data.pop("__provenance__")
    return data


def test_a_sweep_is_its_widths_alone_and_a_killed_sweep_reruns_whole(tmp_path):
    """The f sweep of widths 1 and 12 (one train_widths job): width 12's metrics equal those of a
    run whose grid is [12] (its own job), bitwise but for wall-clock fields. The same sweep
    killed (SIGKILL to Snakemake's process group) once width 1's files are written leaves no
    file of width 12, and the rerun (after --unlock; rerun-incomplete is the default profile's)
    trains the sweep again: both widths' metrics equal the uninterrupted run's, provenance
    included."""
    ref, alone, work = (tmp_path / n for n in ("ref", "alone", "killed"))
    for d in (ref, alone, work):
        d.mkdir()
    sweep = _args(tmp_path, [1, 12], "sweep")
    check(run_snakemake(ref, *sweep))
    check(run_snakemake(alone, *_args(tmp_path, [12], "alone")))
    twelve = f"{CELL.format(12)}/metrics.json"
    assert _numbers(ref / twelve) == _numbers(alone / twelve)
    assert _numbers(ref / f"{CELL.format(1)}/metrics.json")["width"] == 1

    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(work), *sweep]
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    first = work / CELL.format(1) / "metrics.json"
    deadline = time.monotonic() + 600
    while not first.exists():
        assert proc.poll() is None, "the run ended before its first width was written"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    later = work / CELL.format(12)
    leftovers = sorted(p.name for p in later.iterdir()) if later.exists() else []
    assert leftovers == [], leftovers

    check(run_snakemake(work, "--unlock", *sweep[:4]))
    rerun = check(run_snakemake(work, *sweep))
    assert "train_widths" in rerun.stdout + rerun.stderr  # the sweep ran again
    for w in (1, 12):
        path = f"{CELL.format(w)}/metrics.json"
        assert stable_metrics(work / path) == stable_metrics(ref / path), w
