"""Your run against a reference (crl_approx.render.reference) on crafted runs: the same tables
agree, a cell moved beyond its seed noise or its rounding is flagged and named, a cell moved
within its seed noise is not, text and missing tables are flagged."""

import json

import pandas as pd
import pytest

from crl_approx.render import reference


def make_run(root, table=None, exact=None):
    tables = root / "results" / "tables"
    tables.mkdir(parents=True)
    table = table or {"D": [1, 2], "excess": [1.0e-2, 5.0e-4], "excess_sd": [1.0e-3, 1.0e-5]}
    pd.DataFrame(table).to_csv(tables / "trained.csv", index=False)
    exact = exact or {"D": [1, 2], "tail": [0.4902, 0.01397], "tier": ["matches", "close"]}
    pd.DataFrame(exact).to_csv(tables / "exact.csv", index=False)
    return root


@pytest.fixture
def ref(tmp_path):
    return reference.record(make_run(tmp_path / "ref"))


def test_the_same_tables_agree_and_every_cell_is_counted(tmp_path, ref):
    assert reference.compare(make_run(tmp_path / "ours"), ref) == []
    assert reference.cell_count(ref) == 6 + 6


def test_a_trained_cell_within_three_seed_sds_agrees_beyond_is_flagged(tmp_path, ref):
    # excess at D = 1: sd 1e-3, so 2.9e-3 away agrees and 3.1e-3 away does not
    near = {"D": [1, 2], "excess": [1.29e-2, 5.0e-4], "excess_sd": [1.0e-3, 1.0e-5]}
    assert reference.compare(make_run(tmp_path / "near", near), ref) == []
    far = {"D": [1, 2], "excess": [1.31e-2, 5.0e-4], "excess_sd": [1.0e-3, 1.0e-5]}
    misses = reference.compare(make_run(tmp_path / "far", far), ref)
    assert [(m["table"], m["column"], m["row"], m["basis"]) for m in misses] == [
        ("trained.csv", "excess", 0, "3 seed sd")
    ]


def test_a_mean_beside_its_sd_is_judged_by_the_seed_sd(tmp_path):
    """The tables name a trained mean ``c_mean`` beside its ``c_sd``: the same 3-sd rule."""
    base = {"D": [1], "excess_mean": [1.0e-2], "excess_sd": [1.0e-3]}
    ref = reference.record(make_run(tmp_path / "ref", base))
    near = base | {"excess_mean": [1.29e-2]}
    assert reference.compare(make_run(tmp_path / "near", near), ref) == []
    far = base | {"excess_mean": [1.31e-2]}
    misses = reference.compare(make_run(tmp_path / "far", far), ref)
    assert [(m["column"], m["basis"]) for m in misses] == [("excess_mean", "3 seed sd")]
    assert reference.sd_column("excess", ["excess_sd"]) == "excess_sd"
    assert reference.sd_column("excess_mean", ["excess_mean", "other_sd"]) is None


def test_an_exact_cell_must_agree_to_rounding_and_text_exactly(tmp_path, ref):
    moved = {"D": [1, 2], "tail": [0.4902 * (1 + 1e-5), 0.01397], "tier": ["matches", "far"]}
    misses = reference.compare(make_run(tmp_path / "moved", exact=moved), ref)
    assert {(m["column"], m["basis"]) for m in misses} == {("tail", "rounding"), ("tier", "text")}
    tiny = {"D": [1, 2], "tail": [0.4902 * (1 + 1e-8), 0.01397], "tier": ["matches", "close"]}
    assert reference.compare(make_run(tmp_path / "tiny", exact=tiny), ref) == []


def test_a_jobs_time_is_not_a_result(tmp_path):
    """A column that times a job (train_seconds) is left out of the record: another run's
    timing never reads as a difference."""
    timed = {"D": [1, 2], "excess": [1.0e-2, 5.0e-4], "excess_sd": [1.0e-3, 1.0e-5]}
    ref = reference.record(make_run(tmp_path / "ref", timed | {"train_seconds": [50.1, 61.0]}))
    assert "train_seconds" not in ref["tables"]["trained.csv"]
    ours = make_run(tmp_path / "ours", timed | {"train_seconds": [40.0, 45.5]})
    assert reference.compare(ours, ref) == []


def test_a_missing_table_or_column_or_row_is_flagged(tmp_path, ref):
    run = make_run(tmp_path / "ours")
    (run / "results" / "tables" / "exact.csv").unlink()
    assert reference.compare(run, ref) == [
        {"table": "exact.csv", "problem": "missing from your run"}
    ]
    short = {"D": [1], "excess": [1.0e-2], "excess_sd": [1.0e-3]}
    misses = reference.compare(make_run(tmp_path / "short", short), ref)
    assert {m["problem"] for m in misses} == {"1 rows, reference 2"}


def test_the_command_exits_non_zero_on_a_difference(tmp_path, ref, capsys):
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(ref))
    assert (
        reference.main(
            ["compare", "--run", str(make_run(tmp_path / "a")), "--reference", str(path)]
        )
        == 0
    )
    far = {"D": [1, 2], "excess": [2.0e-2, 5.0e-4], "excess_sd": [1.0e-3, 1.0e-5]}
    run = make_run(tmp_path / "b", far)
    assert reference.main(["compare", "--run", str(run), "--reference", str(path)]) == 1
    assert "differs:" in capsys.readouterr().out


def test_the_committed_record_is_of_the_default_run():
    """benchmarks/reference_run.json: the default run's commit and host, Table 1 among its
    tables, with the paper's four dimensions."""
    rec = json.loads(reference.RECORD.read_text())
    assert rec["run"]["command"] == "snakemake --cores all"
    assert rec["tables"]["table1.csv"]["D"][:4] == [1, 2, 4, 8]


def test_a_compare_names_both_hosts_kernel_sets_and_warns_when_they_differ(tmp_path, ref, capsys):
    """Trained numbers are bitwise reproducible on one host only: the compare prints this host's
    kernel set (torch's CPU capability and a hash of the CPU flags) beside the record's, and says
    when they differ or the record has none (the record of 26abe25 had none; its host's trained
    cells differed from this host's beyond rounding while 26abe25 here equals HEAD here)."""
    import torch

    here = reference.cpu_kernels()
    assert here.startswith(torch.backends.cpu.get_cpu_capability() + ", flags ")
    path, out_seen = tmp_path / "ref.json", []
    for kernels, warned in ((here, False), (None, True), ("AVX512, flags 00000000", True)):
        ref["run"]["cpu_kernels"] = kernels
        path.write_text(json.dumps(ref))
        run = make_run(tmp_path / str(len(out_seen)))
        out_seen.append(kernels)
        reference.main(["compare", "--run", str(run), "--reference", str(path)])
        out = capsys.readouterr().out
        assert f"this host: {here}" in out
        assert ("another kernel set or CPU" in out) == warned, out
    assert json.loads(reference.RECORD.read_text())["run"]["cpu_kernels"]
