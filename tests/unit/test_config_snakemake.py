"""Config errors that show only through Snakemake (its --config parser, path wildcards built from
config values), checked by a dry run of the real snakemake in a temporary folder: each refused
before any job, naming its key, nothing written under results/. A failing dry run stops in
common.smk's validation (~3 s); the one that passes parses the whole workflow (~8 s)."""

import pytest
import yaml

from conftest import REPO, run_snakemake

SMOKE = str(REPO / "config" / "smoke.yaml")


def dry_run(tmp_path, *args):
    work = tmp_path / "work"
    work.mkdir()
    proc = run_snakemake(work, "-n", "--configfile", SMOKE, *args, timeout=300)
    assert not (work / "results").exists()
    return proc, proc.stdout + proc.stderr


def test_a_non_finite_config_value_is_refused(tmp_path):
    """`--config tau=nan` reached the jobs (Snakemake parses it as float('nan'))."""
    proc, out = dry_run(tmp_path, "--config", "tau=nan")
    assert proc.returncode != 0
    assert "config key 'tau'" in out and "not a finite number" in out


def test_a_config_list_is_parsed_like_a_yaml_list_and_a_float_seed_is_an_integer(tmp_path):
    """`--config seeds=[0,1]` was refused as "'0' is not of type 'integer'" (Snakemake passes the
    items as strings), and `seeds: [1.0]` gave the path seed~1.0, which the seed wildcard refuses
    (a MissingInputException). Now `--config seeds=[0,1.0]` plans seed 0's and seed 1's jobs as
    `seeds: [0, 1]` in a YAML file would."""
    proc, out = dry_run(tmp_path, "--config", "seeds=[0,1.0]")
    assert proc.returncode == 0, out[-3000:]
    assert "results/data/gmm/seed~1/pairs.npz" in out and "seed~1.0" not in out


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"train": {"lr": float("nan")}}, "train.lr"),
        ({"sample_size": {"other_lrs": [1e20]}}, "sample_size.other_lrs.0"),
    ],
    ids=["lr_nan", "other_lr_1e20"],
)
def test_a_path_wildcard_from_a_bad_value_is_refused_by_key_not_as_a_missing_input(
    tmp_path, override, key
):
    """Both became output paths lr~nan, lr~1e+20 that no rule makes (MissingInputException, the
    key unnamed)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(override))
    proc, out = dry_run(tmp_path, str(bad))
    assert proc.returncode != 0
    assert f"config key '{key}'" in out and "MissingInput" not in out


def test_every_rule_has_a_one_line_description_in_list_rules(tmp_path):
    """`snakemake --list-rules` prints each rule's docstring beside its name: every rule of the
    workflow (the rules Snakemake itself lists, not a hand-kept list) has one, of one line and at
    most ~25 words, and a rule added without one is listed bare and fails this test."""
    import re

    work = tmp_path / "work"
    work.mkdir()
    proc = run_snakemake(work, "--list-rules", "--configfile", SMOKE, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in proc.stdout.splitlines() if re.match(r"^\w+( |$)", ln)]
    defined = set()
    for smk in [*(REPO / "workflow" / "rules").glob("*.smk"), REPO / "workflow" / "Snakefile"]:
        defined |= set(re.findall(r"^rule (\w+):", smk.read_text(), flags=re.M))
        defined |= set(re.findall(r"^use rule \w+ as (\w+)", smk.read_text(), flags=re.M))
    # and one target per report section, made in a loop (crl_approx.config.sections)
    from crl_approx.config.sections import NOT_TARGETS, SECTIONS

    defined |= set(SECTIONS) - set(NOT_TARGETS)
    assert {ln.split()[0] for ln in lines} == defined
    bare = [ln for ln in lines if not re.fullmatch(r"\w+ \(.+\)", ln)]
    assert not bare, f"rules without a description: {bare}"
    long = [ln for ln in lines if len(ln.split("(", 1)[1].split()) > 25]
    assert not long, long
