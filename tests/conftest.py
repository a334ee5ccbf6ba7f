import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake") or "snakemake"


#: the training job the interruption tests stop: its log names the epoch it has reached
TRAINING_LOG = Path("logs", "train_encoder", "gmm", "objective~samples", "score~inner", "dim~2.log")


#: the hand-written steps' tests' model (test_manual_step.py, test_native_step.py): small, and with
#: τ not a power of two, so 1/τ and τ/B round and a reordered scale would show
STEP_TAU = 0.3
STEP_TRAIN = {
    "width": 32,
    "depth": 3,
    "lr": 3e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "score": "inner",
    "cosine_scale": 1.7,
    "cosine_scale_learnable": True,
}


def mixture_grid(nodes: int = 24):
    """The default config's mixture on a population quadrature of ``nodes`` per component."""
    import torch

    from crl_approx.models.gmm import GaussianMixture
    from crl_approx.training.evaluation import Grid

    gmm = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["gmm"]
    return Grid.from_mixture(GaussianMixture.from_config(gmm), nodes, torch.float32, "cpu")


@pytest.fixture(scope="module")
def compiled():
    """The compiled training step (crl_approx.training.native): where a C++ compiler is, failing
    to build it is a failure; skipped without one, or with CRL_NATIVE_STEP=0."""
    from crl_approx.training import native

    if not shutil.which(os.environ.get("CXX", "c++")):
        pytest.skip("no C++ compiler here: the jobs run the Python step")
    if not native.enabled():
        pytest.skip("CRL_NATIVE_STEP=0 in the environment")
    mod = native.module()
    assert mod is not None, "a compiler is here, but the compiled step did not build (see log)"
    return mod


def wait_for_training(proc: subprocess.Popen, work: Path, epoch: int = 3, timeout: float = 300):
    """Wait until the run in ``work`` (snakemake as ``proc``) has trained to ``epoch``."""
    import time

    log = work / TRAINING_LOG
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and f"epoch {epoch}/" in log.read_text():
            return
        assert proc.poll() is None, "snakemake ended before training got under way"
        time.sleep(0.05)
    pytest.fail(f"training never reached epoch {epoch}")


def stable_metrics(path: Path) -> dict:
    """A run's metrics.json without its wall-clock fields (everything else is bitwise stable)."""
    import json

    data = json.loads(path.read_text())
    data.pop("train_seconds")
    for h in data["history"]:
        h.pop("seconds")
    return data


def run_snakemake(workdir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the real snakemake on the repo's Snakefile with --directory ``workdir``."""
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), *args]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        cmd,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def job_counts(proc) -> dict[str, int]:
    """The job-stats table of a dry run: {rule: count}."""
    out = proc.stdout + proc.stderr
    stats = out.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", stats, re.M)}


@pytest.fixture(scope="session")
def smoke_plan(tmp_path_factory) -> dict:
    """The jobs one run of config/smoke.yaml makes, per rule (the `all` target aside), read from
    the workflow's own dry run in an empty folder: the tests compare what ran with what the DAG
    planned (tests/unit/test_smoke_plan.py checks the plan itself against the config)."""
    work = tmp_path_factory.mktemp("smoke-plan")
    configfile = str(REPO / "config" / "smoke.yaml")
    proc = run_snakemake(work, "--dry-run", "--quiet", "rules", "--configfile", configfile)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = job_counts(proc)
    plan.pop("all")
    return plan


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """One real run of the whole workflow on config/smoke.yaml, shared by the e2e tests."""
    work = tmp_path_factory.mktemp("smoke")
    proc = run_snakemake(work, "--cores", "2", "--configfile", str(REPO / "config" / "smoke.yaml"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return work


def workflow_registry(*configfiles: str) -> dict:
    """What the workflow itself declares, read by parsing it with Snakemake (a dry run of a
    Snakefile that includes it and prints its registry): {"local": the local rules,
    "experiments": crl_approx.config.experiments.Registry.describe(), "provenance": the derived
    provenance registry, table → [file, the rule that writes it]}."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        snakefile = Path(tmp, "Snakefile")
        snakefile.write_text(
            f'include: "{REPO / "workflow" / "Snakefile"}"\n'
            "import json\n"
            'print("REGISTRY=" + json.dumps({"local": sorted(workflow._localrules), '
            '"experiments": EXPERIMENTS.describe(), "provenance": PROVENANCE}))\n'
        )
        extra = ["--configfile", *configfiles] if configfiles else []
        proc = subprocess.run(
            [SNAKEMAKE, "-s", str(snakefile), "--dry-run", "--quiet", "rules", *extra],
            cwd=tmp,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("REGISTRY=")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[0].split("=", 1)[1])


@pytest.fixture(scope="session")
def registry() -> dict:
    """The default workflow's declarations (:func:`workflow_registry`)."""
    return workflow_registry()


@pytest.fixture(scope="session")
def default_config() -> dict:
    with open(REPO / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="session")
def schema() -> dict:
    from crl_approx.config import load_schema

    return load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")


def pytest_collection_modifyitems(config, items):
    """Every end-to-end test is slow: the fast tier (-m "not slow") is the unit tests that run in
    seconds."""
    for item in items:
        if item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config):
    return f"python {sys.version.split()[0]}, snakemake at {SNAKEMAKE}"
