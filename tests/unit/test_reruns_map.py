"""The rerun survey's parts on crafted inputs: a change per key, the dry-run parser."""

import pytest

from crl_approx.config import load_schema, reruns, validate_config

SCHEMA = load_schema(reruns.REPO / "workflow" / "schemas" / "config.schema.yaml")

DRY = """Building DAG of jobs...
[Wed Dec  2 05:45:41 2026]
rule probe_lcgm:
    output: results/lcgm/score~inner/dim~2/seed~0/probes.json
    reason: Params have changed since last execution: Union of exclusive params before and now
    wildcards: dim=2, seed=0
[Wed Dec  2 05:45:41 2026]
localrule assemble_lcgm:
    output: results/tables/lcgm_probes.csv
    reason: Input files updated by another job: results/lcgm/score~inner/dim~2/seed~0/probes.json
[Wed Dec  2 05:45:41 2026]
rule train_encoder:
    output: results/encoders/x/metrics.json
    reason: Code has changed since last execution
[Wed Dec  2 06:13:16 2026] Group job digits_training (jobs in lexicogr. order):

    [Wed Dec  2 06:13:16 2026]
    rule train_digits:
        output: results/digits/encoders/K10/dim~10/seed~0/metrics.json
        reason: Params have changed since last execution: Union of exclusive params
[Wed Dec  2 05:45:41 2026]
localrule all:
    reason: Input files updated by another job: results/tables/lcgm_probes.csv
Job stats:
"""


def test_the_parser_reads_each_jobs_rule_and_reason():
    jobs = reruns.planned_jobs(DRY)
    assert jobs == [
        ("probe_lcgm", "params"),
        ("assemble_lcgm", "upstream"),
        ("train_encoder", "Code has changed since last execution"),
        ("train_digits", "params"),  # a grouped job, indented
        ("all", "upstream"),
    ]
    assert reruns.summarise(jobs) == {
        "reads": ["probe_lcgm", "train_digits"],
        "jobs": 4,
        "reruns": ["assemble_lcgm", "probe_lcgm", "train_digits", "train_encoder"],
    }


@pytest.mark.parametrize(
    "path", [("tau",), ("seeds",), ("train", "schedule"), ("lcgm", "dims"), ("gmm", "dims")]
)
def test_a_change_is_valid_and_differs(path):
    config = validate_config(reruns.merged(reruns.SMOKE), SCHEMA, memory=64 << 30)
    override = reruns.perturbation(config, SCHEMA, path)
    node = override
    for part in path:
        node = node[part]
    old = config
    for part in path:
        old = old[part]
    assert node != old
    changed = reruns.merged(reruns.SMOKE)
    changed.setdefault(path[0], {}) if len(path) > 1 else None
    target = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = node
    validate_config(changed, SCHEMA, memory=64 << 30)  # accepted
