import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake") or "snakemake"


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


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """One real run of the whole workflow on config/smoke.yaml, shared by the e2e tests."""
    work = tmp_path_factory.mktemp("smoke")
    proc = run_snakemake(work, "--cores", "2", "--configfile", str(REPO / "config" / "smoke.yaml"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return work


@pytest.fixture(scope="session")
def default_config() -> dict:
    with open(REPO / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="session")
def schema() -> dict:
    from crl_approx.config import load_schema

    return load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")


def pytest_report_header(config):
    return f"python {sys.version.split()[0]}, snakemake at {SNAKEMAKE}"
