"""What a config change reruns: every leaf key of the smoke configuration changed once on a
finished smoke run, a dry run each (crl_approx.config.reruns), checked against the committed map
config/reruns.yaml and against what a change may cause at all."""

import pytest
import yaml

from crl_approx.config import load_paper_values, reruns

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def survey(smoke_run):
    return reruns.survey(smoke_run)


def test_every_config_key_takes_a_valid_change(survey):
    """Each of the configuration's leaf keys (the schema's defaults filled in) is changed: none is
    skipped because no valid value exists, no dry run fails."""
    assert len(survey) > 100
    assert not [k for k, v in survey.items() if v["override"] is None]
    failed = {k: v["error"] for k, v in survey.items() if "error" in v}
    assert not failed, failed


def test_a_job_reruns_only_because_of_the_changed_key(survey):
    """Every planned job reads the key (params changed), reads an output that a rerun job
    rewrites, or is new (the key reshapes the grid): never code or software (no code changed)."""
    allowed = {"params", "upstream", "new", "inputs"}
    odd = {
        key: [(rule, kind) for rule, kind in v["planned"] if not set(kind.split("+")) <= allowed]
        for key, v in survey.items()
    }
    assert not {k: jobs for k, jobs in odd.items() if jobs}


def test_the_plan_of_every_key_is_the_committed_map(survey):
    """config/reruns.yaml is the declaration (generated, reviewed in its diff): a rule that starts
    reading a key, or stops, changes it; this fails until it is regenerated."""
    declared = yaml.safe_load(reruns.MAP.read_text())
    found = reruns.as_map(survey)
    differ = {k: {"declared": declared.get(k), "found": found.get(k)} for k in declared | found}
    differ = {k: v for k, v in differ.items() if v["declared"] != v["found"]}
    assert not differ, "regenerate: python3 -m crl_approx.config.reruns --run DIR --write\n" + str(
        differ
    )


def test_a_guard_and_a_plot_size_rerun_only_what_reads_them(survey):
    """The divergence guard reruns no job but the report (which prints the configuration it
    describes): the training shims read it from the config. The LCGM feature plot's sample size
    reruns the probes that draw it (and what reads them), not Table 1 or the study (a table given
    whole config sections once did); the elbow rule only the LCGM's assembly."""
    assert survey["train.max_loss"]["reads"] == ["build_report"]
    assert survey["train.max_loss"]["jobs"] == 1
    assert survey["lcgm.n_feature_plot"]["reads"] == ["probe_lcgm"]
    planned = {rule for rule, _ in survey["lcgm.n_feature_plot"]["planned"]}
    assert not planned & {"assemble_table1", "assemble_sample_size", "train_encoder"}
    assert survey["lcgm.elbow_fraction"]["reads"] == ["assemble_lcgm"]


#: Experiment W's training rules (the towers' sweeps, the mixture's, the LCGM's widest cells)
W_TRAINING = ("train_widths", "train_widths_gmm", "train_widths_widest")


def test_the_lcgm_pool_reruns_no_width_cell(survey):
    """Experiment W's LCGM cells train on a fresh stream and draw their validation and probe-test
    pairs in the job (issue 36): the LCGM pool's size reruns none of them, nor the assembly; the
    stream's steps rerun every LCGM cell (the LCGM's and the dimension sweep's three, the 2x
    cell), for their params, and none of the mixture's."""
    assert not {*W_TRAINING, "assemble_widths"} & set(survey["lcgm.n_train"]["reruns"])
    steps = [kind for rule, kind in survey["widths.lcgm_steps"]["planned"] if rule in W_TRAINING]
    assert steps == ["params"] * 7  # smoke: the LCGM worlds' 2 sweeps and widest cell each, 2x


def test_the_plan_does_not_depend_on_the_order_the_run_wrote_its_files(smoke_run):
    """A key that brings in an input (widths.gmm_objective: the sampled pairs) reads as params
    even when the run wrote that input after the job (CI once did, and Snakemake then named only
    "Updated input files"): the survey gives the run's files one time first. Seen failing
    without it (the reason was "Updated input files")."""
    import os
    import time

    pairs = smoke_run / "results" / "data" / "gmm" / "seed~0" / "pairs.npz"
    later = time.time_ns() + 10**9
    os.utime(pairs, ns=(later, later))  # newer than every width cell
    reruns.settle_times(smoke_run)
    rc, out = reruns.dry_run(smoke_run, {"widths": {"gmm_objective": "samples"}})
    assert rc == 0, out[-2000:]
    kinds = {kind for rule, kind in reruns.planned_jobs(out) if rule == "train_widths_gmm"}
    assert kinds and all("params" in k.split("+") for k in kinds), kinds
    rc, out = reruns.dry_run(smoke_run, {})
    assert rc == 0 and "Nothing to be done" in out, out[-2000:]


def recorded_params(run, output: str) -> list:
    """The params Snakemake recorded for the job that wrote ``output`` (.snakemake/metadata)."""
    import ast
    import base64
    import json

    name = base64.b64encode(output.encode()).decode()
    record = json.loads((run / ".snakemake" / "metadata" / name).read_text())
    return [ast.literal_eval(p) for p in record["params"]]


@pytest.mark.parametrize(
    "output, settings",
    [
        (
            "results/tables/table1.csv",
            ("table1_spectral_tail", "table1_truncation", "table1_mlp"),
        ),
        ("results/tables/lcgm_probes.csv", ("lcgm",)),
        ("results/tables/sample_size.csv", ("table1_mlp",)),
    ],
)
def test_a_table_that_quotes_the_paper_gets_only_the_keys_its_settings_name(
    smoke_run, output, settings
):
    """A table compared with the paper's values where the run shares the paper's setting is given
    the keys that setting names (paper_values.yaml), not whole config sections: Table 1 once
    reran on the LCGM's plot size. Read from the params Snakemake recorded for the job (a dry
    run cannot show it: a job whose inputs are rewritten reports that reason only)."""
    from crl_approx.config import flat

    paper = load_paper_values(reruns.REPO / "workflow" / "resources" / "paper_values.yaml")
    named = {key for name in settings for key in paper["settings"][name]}
    setting = [p for p in recorded_params(smoke_run, output) if isinstance(p, dict) and "tau" in p]
    assert len(setting) == 1
    assert set(flat(setting[0])) == named
