"""The profiles mean what they say: `snakemake --profile profiles/X` runs with X's settings.

Snakemake also loads profiles/default (the workflow-specific profile) and lets it win over
--profile key by key, so profiles/default must not set what an executor's profile sets.
"""

import re
from pathlib import Path

import pytest
import yaml
from snakemake.cli import parse_args

from conftest import REPO

PROFILES = ["slurm", "local-gpu"]


def effective(monkeypatch, *argv: str):
    """The parsed command line of `snakemake ARGV` run from the repository root, profiles
    applied the way snakemake applies them."""
    monkeypatch.chdir(REPO)
    return parse_args(list(argv))[1]


def profile(name: str) -> dict:
    return yaml.safe_load((REPO / "profiles" / name / "config.yaml").read_text())


def dest(key: str) -> str:
    return key.replace("-", "_")


@pytest.mark.parametrize("name", PROFILES)
def test_every_setting_of_a_profile_survives_the_workflow_profile(monkeypatch, name):
    alone = effective(monkeypatch, "--profile", f"profiles/{name}", "--workflow-profile", "none")
    both = effective(monkeypatch, "--profile", f"profiles/{name}")
    for key in profile(name):
        # repr: snakemake parses resources into objects that compare by identity
        assert repr(getattr(both, dest(key))) == repr(getattr(alone, dest(key))), key


def test_the_slurm_profile_runs_with_its_own_settings(monkeypatch):
    args = effective(monkeypatch, "--profile", "profiles/slurm")
    assert args.executor == "slurm"
    assert args.latency_wait == 60
    assert args.jobs == 100
    assert args.retries == 1
    resources = args.default_resources
    assert repr(resources["mem_mb"]) == 'Resource("mem_mb", 4000)'
    assert repr(resources["runtime"]) == 'Resource("runtime", 60)'  # minutes
    assert (
        repr(args.set_resources["train_encoder"]["cpus_per_task"]) == 'Resource("cpus_per_task", 4)'
    )
    assert repr(args.set_resources["train_encoder"]["mem_mb"]) == 'Resource("mem_mb", 16000)'

    # digits cells share submissions, each submission with its own single GPU
    assert args.group_components == {"digits_training": 7}
    assert args.set_resource_scopes == {"gpu": "local"}
    assert repr(args.resources["gpu"]) == 'Resource("gpu", 1)'
    # and the workflow profile's executor-neutral settings still apply
    assert args.rerun_incomplete and args.show_failed_logs


def test_the_default_profile_sets_nothing_an_executor_profile_sets():
    default = set(profile("default"))
    for name in PROFILES:
        shared = default & set(profile(name))
        values = {key: (profile("default")[key], profile(name)[key]) for key in shared}
        assert all(a == b for a, b in values.values()), (name, values)


def test_local_runs_keep_snakemakes_own_latency_wait(monkeypatch):
    assert effective(monkeypatch).latency_wait == 5
    assert Path(REPO / "profiles" / "default" / "config.yaml").is_file()


def gpu_rules() -> set[str]:
    """The rules whose resources carry gpu=1, read from workflow/rules/*.smk (a rule made by
    ``use rule A as B with:`` carries A's unless it sets resources of its own)."""
    found, inherited = set(), []
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"\n(?=rule |use rule )", smk.read_text()):
            name = re.match(r"rule (\w+):", block)
            if name and re.search(r"\n        gpu=1,", block):
                found.add(name.group(1))
            used = re.match(r"use rule (\w+) as (\w+) with:", block)
            if used and "\n    resources:" not in block:
                inherited.append(used.groups())
    return found | {new for base, new in inherited if base in found}


@pytest.mark.parametrize(
    ("doc", "marker"),
    [
        ("README.md", "Training rules ("),
        ("docs/cluster.md", "Training jobs ("),
        ("profiles/slurm/config.yaml", "The training rules ("),
    ],
)
def test_the_docs_name_every_gpu_rule(doc, marker):
    rules = gpu_rules()
    assert {"train_encoder", "train_sample_size", "train_digits"} <= rules
    text = (REPO / doc).read_text().split(marker, 1)[1].split(")", 1)[0]
    assert set(re.findall(r"\w+", text.replace("#", " "))) == rules, (doc, text)


def test_setting_the_gpu_partition_where_the_docs_say_moves_every_gpu_rule():
    """docs/cluster.md, step 1, done literally: replace the value of `slurm_partition` under
    `set-resources: train_encoder` (and nothing else). Every GPU-tagged rule's partition is then
    the new one; before, `train_digits` kept its own copy and went to SET_ME_gpu_partition."""
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    head, tail = text.split("\n  train_encoder:", 1)
    line = re.search(r'\n    slurm_partition: (&\w+ )?"SET_ME_gpu_partition"', tail).group(0)
    edited = (
        head + "\n  train_encoder:" + tail.replace(line, line.replace("SET_ME_gpu", "gpu_a100"), 1)
    )
    sets = yaml.safe_load(edited)["set-resources"]
    gpu = gpu_rules()
    assert gpu <= set(sets)
    assert {r: sets[r]["slurm_partition"] for r in gpu} == {r: "gpu_a100_partition" for r in gpu}
    assert "SET_ME_gpu_partition" not in yaml.safe_dump(sets)


@pytest.mark.parametrize(
    "argv", [(), ("--profile", "profiles/slurm"), ("--profile", "profiles/local-gpu")]
)
def test_every_run_reschedules_on_the_workflow_profiles_timespan(monkeypatch, argv):
    # Snakemake's default (100/1s) starts a 1 s chain of scheduling passes per finished job
    # (benchmarks/scheduler_overhead.py); the workflow profile's longer timespan reaches every run
    limit = effective(monkeypatch, *argv).max_jobs_per_timespan
    assert (limit.max_jobs, limit.timespan) == (100, 3)
    default = effective(monkeypatch, "--workflow-profile", "none").max_jobs_per_timespan
    assert default.timespan == 1  # what the profile changes, as this Snakemake has it
