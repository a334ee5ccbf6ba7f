"""The workflow through profiles/slurm on a real one-node SLURM (tests/cluster/start_slurm.sh).

Skipped when no SLURM is up (a developer without root), unless CRL_REQUIRE_SLURM=1, which .ci/run
sets after starting the cluster: there a missing cluster is a failure, not a skip.
"""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, SNAKEMAKE, stable_metrics

pytestmark = [pytest.mark.slurm, pytest.mark.e2e]
SMOKE = str(REPO / "config" / "smoke.yaml")
TIMEOUT = 900  # seconds; every snakemake call is wrapped in `timeout -s INT`


def slurm_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
    return (proc.returncode == 0 and "idle" in proc.stdout) or "mix" in proc.stdout


if not slurm_up():
    if os.environ.get("CRL_REQUIRE_SLURM") == "1":
        raise RuntimeError("CRL_REQUIRE_SLURM=1 but no idle SLURM node: start_slurm.sh failed?")
    pytest.skip(
        "no SLURM cluster up (tests/cluster/start_slurm.sh needs root)", allow_module_level=True
    )


def slurm_profile(tmp_path: Path) -> Path:
    """profiles/slurm with the placeholders filled in for the test cluster, plus the settings a
    cluster without an accounting database needs (squeue status; MinJobAge 600 s in
    start_slurm.sh is well above 3 × the 5 s first status check)."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    profile["default-resources"].update(slurm_account="crltest", slurm_partition="main")
    # every GPU rule of the profile (those with a partition of their own: the training rules)
    gpu_rules = [r for r, res in profile["set-resources"].items() if "slurm_partition" in res]
    assert {"train_encoder", "train_encoder_budget", "train_widths"} <= set(gpu_rules)
    for rule in gpu_rules:
        gpu_job = dict(profile["set-resources"][rule])  # a copy: the profile's YAML aliases them
        profile["set-resources"][rule] = gpu_job | {
            "slurm_partition": "main",
            "cpus_per_task": 2,
            "mem_mb": 4000,
        }
    profile.update(
        {
            "jobs": 4,
            "latency-wait": 5,
            "retries": 0,
            "slurm-status-command": "squeue",
            "slurm-init-seconds-before-status-checks": 5,
        }
    )
    out = tmp_path / "profile"
    out.mkdir()
    (out / "config.yaml").write_text(yaml.safe_dump(profile))
    return out


#: how the test names a submission of train_digits' group (sbatch's comment is
#: rule_<group id>_<its rules>, the group id Snakemake's: the group's name or an id per instance)
DIGITS_GROUP = "group of train_digits"


def is_digits_group(comment: str) -> bool:
    return "train_digits" in comment and not comment.startswith("rule_train_digits")


def profile_settings() -> dict:
    return yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())


def local_rules() -> set[str]:
    """The workflow's local rules, as Snakemake parses them (each experiment's declaration names
    its own; conftest.workflow_registry)."""
    from conftest import workflow_registry

    return set(workflow_registry()["local"])


def snakemake(work: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = ["timeout", "-s", "INT", str(TIMEOUT), SNAKEMAKE, "-s", str(REPO / "Snakefile")]
    cmd += ["--directory", str(work), "--profile", str(profile), *args]
    return subprocess.run(
        cmd,
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT + 60,
    )


def slurm_jobs() -> dict[str, dict[str, str]]:
    """Every job slurmctld still remembers (MinJobAge), as {job id: fields}."""
    out = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True).stdout
    jobs = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


def test_workflow_runs_through_the_slurm_profile(tmp_path, smoke_run, smoke_plan):
    profile = slurm_profile(tmp_path)
    before = set(slurm_jobs())
    work = tmp_path / "work"
    work.mkdir()
    t0 = time.time()
    proc = snakemake(work, profile, "--configfile", SMOKE)
    wall = time.time() - t0
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    print(f"slurm smoke run: {wall:.0f} s")

    # SLURM's own records: every job of the DAG but the workflow's localrules went through sbatch,
    # the train_digits cells in groups of group-components
    new = {k: v for k, v in slurm_jobs().items() if k not in before}
    rules = {}
    for job in new.values():
        assert job["JobState"] == "COMPLETED", job
        comment = job.get("Comment", "")
        if is_digits_group(comment):
            rules.setdefault(DIGITS_GROUP, []).append(job)
            continue
        match = re.match(r"rule_([a-z0-9_]+?)(_wildcards_.*)?$", comment)
        assert match, job
        rules.setdefault(match.group(1), []).append(job)
    local = local_rules()
    assert "plot_digits" in local and "train_digits" not in local
    per_group = profile_settings()["group-components"]["digits_training"]
    expected = {r: n for r, n in smoke_plan.items() if r not in local and r != "train_digits"}
    expected[DIGITS_GROUP] = -(-smoke_plan["train_digits"] // per_group)
    assert {r: len(j) for r, j in rules.items()} == expected
    assert sum(expected.values()) < sum(smoke_plan.values()) - smoke_plan["train_digits"]
    # the GPU request travelled with the training jobs only, one GPU per submission, groups too
    training = ("train_encoder", "train_encoder_budget", "train_sample_size", "train_widths")
    training += ("train_widths_gmm", "train_widths_widest", "train_smoothness")
    training += (DIGITS_GROUP,)
    for job in [j for rule in training for j in rules[rule]]:
        assert re.search(r"gpu[:=]1\b", job.get("TresPerJob", "")), job
        assert job["Partition"] == "main"
    for rule, jobs in rules.items():
        if rule not in training:
            for job in jobs:
                assert "gpu" not in job.get("TresPerJob", "") + job.get("TRES", ""), job
    # a group asks for its cells' runtimes one after another (SLURM's TimeLimit, h:mm:ss)
    cell = 15  # minutes: profiles/slurm's set-resources of train_digits
    limit = rules[DIGITS_GROUP][0]["TimeLimit"]
    hours, minutes, _ = (int(x) for x in limit.split(":")) if limit.count(":") == 2 else (0, 0, 0)
    assert hours * 60 + minutes == cell * min(per_group, smoke_plan["train_digits"]), limit

    # the same numbers as the local run of the same config
    ours = pd.read_csv(work / "results" / "tables" / "table1.csv")
    local = pd.read_csv(smoke_run / "results" / "tables" / "table1.csv")
    pd.testing.assert_frame_equal(ours, local, check_exact=True)
    for path in sorted((smoke_run / "results" / "encoders").rglob("metrics.json")):
        rel = path.relative_to(smoke_run)
        assert stable_metrics(work / rel) == stable_metrics(path), rel
    # the sbatch logs are kept where the README says
    assert list((work / ".snakemake" / "slurm_logs").rglob("*.log"))


def test_a_failing_cluster_job_fails_the_workflow_naming_the_rule(tmp_path):
    profile = slurm_profile(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"train": {"max_loss": 0.001}}))
    work = tmp_path / "work"
    work.mkdir()
    # the sampled in-batch loss is ~2.7 nats·τ, far above max_loss: TrainingDiverged on the node
    target = "results/encoders/gmm/objective~samples/score~inner/dim~1/seed~0/metrics.json"
    proc = snakemake(work, profile, "--configfile", SMOKE, str(bad), "--", target)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Error in rule train_encoder" in text, text[-3000:]
    assert not (work / target).exists()
