"""A corrupt intermediate is named and healed; an interrupted run stops, jobs and all.

Both tests run the real Snakemake on config/smoke.yaml in their own folder (the shared smoke run
is left alone)."""

import os
import re
import shutil
import signal
import subprocess
import time

import pandas as pd
import pytest
import yaml

from conftest import REPO, SNAKEMAKE, TRAINING_LOG, run_snakemake, stable_metrics, wait_for_training

pytestmark = pytest.mark.e2e

SMOKE = str(REPO / "config" / "smoke.yaml")
LCGM = "results/encoders/lcgm/objective~samples/score~inner"
#: the LCGM's probes (read model.pt) and training dynamics (read checkpoints.npz, metrics, pairs)
TABLES = ["results/tables/lcgm_probes.csv", "results/tables/dynamics_lcgm.csv"]


def check(proc):
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def numbers(work):
    """The tables' numbers (wall times aside)."""
    out = {}
    for t in TABLES:
        df = pd.read_csv(work / t)
        out[t] = df[[c for c in df.columns if "seconds" not in c]]
    return out


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_checkpoint_or_model_is_named_and_heals(tmp_path):
    """Today: `BadZipFile` in measure_dynamics_lcgm and an `OSError` (`PytorchStreamReader
    failed` for other truncations) in probe_lcgm, the file never named. Mutation caught: a
    reader back to np.load / torch.load (tried: dynamics_lcgm's checkpoints)."""
    args = ["--cores", "2", "--configfile", SMOKE, "--keep-going", "--", *TABLES]
    check(run_snakemake(tmp_path, *args))
    before = numbers(tmp_path)

    ckpt = f"{LCGM}/dim~2/seed~0/checkpoints.npz"
    model = f"{LCGM}/dim~4/seed~0/model.pt"
    truncate(tmp_path / ckpt)
    truncate(tmp_path / model)
    proc = run_snakemake(tmp_path, *args)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for path in (ckpt, model):
        assert f"{path}: cannot be read, truncated or corrupt" in text, text[-6000:]
    assert "(BadZipFile: File is not a zip file)" in text  # the cause follows the path
    heal = sorted(set(re.findall(r"`(--forcerun \S+)`", text)))
    assert heal == [f"--forcerun {ckpt}", f"--forcerun {model}"], heal

    # the stated command heals: the producing jobs rerun, then their readers
    forced = [h.split()[1] for h in heal]
    check(
        run_snakemake(
            tmp_path, "--cores", "2", "--configfile", SMOKE, "--forcerun", *forced, "--", *TABLES
        )
    )
    after = numbers(tmp_path)
    for t in TABLES:
        pd.testing.assert_frame_equal(after[t], before[t], check_exact=True)


def test_a_pool_copied_over_a_seeds_pairs_is_named_and_heals(tmp_path):
    """The swap of issue 27: a valid pool of 1024 pairs copied over seed 0's 4096 pairs. Today the
    training reruns on it (the copy is newer) and every table downstream silently changes.
    Mutation caught: load_npz not comparing the recorded path."""
    pairs = "results/data/gmm/seed~0/pairs.npz"
    pool = "results/sample_size/data/pool~1024/seed~0/pairs.npz"
    run = "results/encoders/gmm/objective~samples/score~inner/dim~1/seed~0/metrics.json"
    args = ["--cores", "2", "--configfile", SMOKE, "--"]
    check(run_snakemake(tmp_path, *args, run, pool))
    before = stable_metrics(tmp_path / run)
    shutil.copy(tmp_path / pool, tmp_path / pairs)
    proc = run_snakemake(tmp_path, *args, run)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{pairs}: holds {pool}, written by rule make_pool (pool=1024, seed=0)" in text, text[
        -4000:
    ]
    assert f"`--forcerun {pairs}`" in text
    check(
        run_snakemake(
            tmp_path, "--cores", "2", "--configfile", SMOKE, "--forcerun", pairs, "--", run
        )
    )
    assert stable_metrics(tmp_path / run) == before


TARGET = "results/encoders/gmm/objective~samples/score~inner/dim~2/seed~0/metrics.json"
RUN_DIR = TARGET.rsplit("/", 1)[0]


def test_sigint_to_the_process_group_stops_the_run_and_its_jobs(tmp_path):
    """Ctrl-C in a terminal sends SIGINT to the foreground process group: Snakemake and its job
    processes. Everything exits soon (well before the training would have ended), no output or
    temporary of the interrupted job is left, the lock is released, and a plain rerun completes.
    Mutation caught: a job that ignores SIGINT (the group would not exit within the bound)."""
    override = tmp_path / "long.yaml"
    override.write_text(yaml.safe_dump({"train": {"epochs": 40}, "gmm": {"n_train": 16384}}))
    args = ["--cores", "2", "--configfile", SMOKE, str(override), "--", TARGET]
    work = tmp_path / "work"
    work.mkdir()
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(work), *args]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    wait_for_training(proc, work)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("snakemake still running 120 s after SIGINT")
    assert proc.returncode != 0
    # no process of the group is left (the training job included)
    for _ in range(100):
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("a job of the interrupted run is still running")
    assert "Terminating processes on user request" in out, out[-3000:]
    run_dir = work / RUN_DIR
    leftovers = sorted(p.name for p in run_dir.iterdir()) if run_dir.exists() else []
    assert leftovers == [], leftovers
    text = (work / TRAINING_LOG).read_text()
    assert "KeyboardInterrupt" in text and "epoch 40/40" not in text  # the job itself stopped
    # the lock is gone (no --unlock needed) and the rerun completes
    check(run_snakemake(work, *args))
    assert (work / TARGET).exists()
