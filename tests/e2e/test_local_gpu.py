"""profiles/local-gpu: GPU-tagged jobs queue for the card, CPU jobs run beside them."""

from datetime import datetime
from pathlib import Path

import pytest

from conftest import REPO, run_snakemake

pytestmark = pytest.mark.e2e


def job_interval(log: Path) -> tuple[datetime, datetime]:
    """Start and end of a job from the first and last timestamped lines of its log."""
    stamps = [
        datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
        for line in log.read_text().splitlines()
        if line[:4].isdigit()
    ]
    return stamps[0], stamps[-1]


def overlaps(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_gpu_jobs_never_overlap_while_cpu_jobs_run_beside_them(tmp_path, smoke_plan):
    # more job slots than ready jobs and 1-thread training: only the gpu resource can serialise it
    proc = run_snakemake(
        tmp_path,
        "--profile",
        str(REPO / "profiles" / "local-gpu"),
        "--resources",
        "gpu=1",
        "--cores",
        "8",
        "--set-threads",
        "train_encoder=1",
        "--configfile",
        str(REPO / "config" / "smoke.yaml"),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    logs = tmp_path / "logs"
    train_rules = ("train_encoder", "train_encoder_budget", "train_sample_size", "train_digits")
    train_rules += ("train_widths", "train_widths_gmm", "train_widths_widest", "train_smoothness")
    train = [job_interval(p) for rule in train_rules for p in sorted((logs / rule).rglob("*.log"))]
    # every CPU-only job: those that need no training (the spectrum, datasets, the noise Monte
    # Carlo) and those that need only part of it (a probe after its D's training) can run while
    # the queue of GPU jobs drains
    cpu_rules = [rule for rule in smoke_plan if rule not in train_rules]
    cpu = [job_interval(p) for rule in cpu_rules for p in sorted((logs / rule).rglob("*.log"))]
    assert len(train) == sum(smoke_plan[rule] for rule in train_rules)
    assert len(cpu) == sum(smoke_plan[rule] for rule in cpu_rules)
    for i, a in enumerate(train):
        for b in train[i + 1 :]:
            assert not overlaps(a, b), (a, b)
    assert any(overlaps(c, t) for c in cpu for t in train), (cpu, train)
