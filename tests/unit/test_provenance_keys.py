"""The provenance registry is derived, twice over: its tables and the rules that write them from the
experiments' declarations (``Registry.provenance``, read here from the workflow itself), and a
table's config keys as those whose change reruns the rule that writes it (config/reruns.yaml,
which tests/e2e/test_reruns.py checks against real dry runs), so a key a rule reads cannot be
missing from its cells' titles, and a table a rule writes cannot be missing from the registry."""

import pytest

from crl_approx.config import experiments, sections
from crl_approx.render import provenance

CRAFTED = {
    "a.read_by_the_rule": {"reads": ["assemble_x"], "reruns": ["assemble_x", "build_report"]},
    "b.read_upstream": {"reads": ["train_x"], "reruns": ["train_x", "assemble_x", "plot_x"]},
    "c.read_elsewhere": {"reads": ["assemble_y"], "reruns": ["assemble_y"]},
    "d.only_the_report": {"reads": ["build_report"], "reruns": ["build_report"]},
}


def test_a_tables_keys_are_the_keys_whose_change_reruns_its_rule():
    assert provenance.depends_on("assemble_x", CRAFTED) == ("a.read_by_the_rule", "b.read_upstream")
    assert provenance.depends_on("train_x", CRAFTED) == ("b.read_upstream",)
    assert provenance.depends_on("nobody", CRAFTED) == ()
    t = provenance.tables({"x": ("t/x.csv", "assemble_x")}, CRAFTED)
    assert t == {"x": ("t/x.csv", "assemble_x", ("a.read_by_the_rule", "b.read_upstream"))}


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(sections, "EXTRA", {})
    return experiments.Registry()


def test_the_registry_is_every_declared_table_by_its_stem(fresh):
    fresh.declare(
        "lcgm",
        tables={"lcgm_table": "t/lcgm_probes.csv", "design": "t/design.json"},
        claims={"lcgm_probes": ("t/lcgm_probes.csv", "lcgm_probes"), "e": ("t/e.csv", "e")},
    )
    writers = {"t/lcgm_probes.csv": "assemble_lcgm", "t/e.csv": "assemble_e"}
    # JSON files are not tables; a claims input is one even when no report section shows it
    assert fresh.provenance(writers.__getitem__) == {
        "lcgm_probes": ("t/lcgm_probes.csv", "assemble_lcgm"),
        "e": ("t/e.csv", "assemble_e"),
    }


def test_the_registry_refuses_a_claims_source_it_does_not_hold(fresh):
    fresh.declare("noise", claims={"noise_exponent": ("t/noise_exponent.csv", "noise")})
    with pytest.raises(experiments.ContractError, match="'noise' is no declared table"):
        fresh.provenance(lambda path: "assemble_noise")


def test_the_registry_refuses_two_files_of_one_stem(fresh):
    fresh.declare("table1", tables={"a": "results/a/t.csv", "b": "results/b/t.csv"})
    with pytest.raises(experiments.ContractError, match="one provenance name 't'"):
        fresh.provenance(lambda path: "r")


def test_every_table_a_rule_writes_under_results_tables_is_in_the_workflows_registry(registry):
    derived = registry["provenance"]
    declared = {
        path
        for e in registry["experiments"].values()
        for path in [*e["tables"].values(), *(f for f, _ in e["claims"].values())]
    }
    assert {path for path, _ in derived.values()} == {p for p in declared if p.endswith(".csv")}
    # what the registry kept by hand was missing or named differently (issue 34)
    assert derived["calibration_points"] == [
        "results/tables/calibration_points.csv",
        "measure_calibration",
    ]
    assert derived["noise_exponent"][1] == "assemble_noise"


def test_every_key_a_tables_rule_reads_is_named_in_its_provenance(registry):
    tables = provenance.tables(registry["provenance"])
    missing = {
        name: sorted(
            k for k, v in provenance.RERUNS.items() if rule in (v["reads"] or ()) and k not in keys
        )
        for name, (_, rule, keys) in tables.items()
    }
    assert not {name: m for name, m in missing.items() if m}


def test_the_keys_the_hand_kept_registry_missed_are_named(registry):
    """What the registry kept by hand omitted (issue 34): the LCGM design keys Experiment W's
    cells are trained on (train.max_loss, which it also omitted, is now read at run time by the
    training shims and reruns nothing, common.smk). Since issue 36 the LCGM cells train on a fresh
    stream: the pool's size is not among their keys, the stream's steps are."""
    tables = provenance.tables(registry["provenance"])
    widths = tables["widths"][2]
    assert "lcgm.d_x" in widths and "widths.lcgm_steps" in widths
    assert "lcgm.n_train" not in widths
    assert "gmm.mu_x" in widths
    assert "train.lr" in tables["table1"][2] and "train.max_loss" not in tables["table1"][2]


def test_every_table_the_report_cites_is_in_the_derived_registry(registry):
    """Every ``src(table, …)`` of the report's code and template names a table of the registry (a
    name the registry does not hold fails the report's build, on the default run only when that
    section renders)."""
    import re

    from conftest import REPO

    files = [REPO / "report" / "templates" / "index.html.j2"]
    files += sorted((REPO / "workflow" / "scripts" / "crl_approx" / "render").glob("*.py"))
    cited = set()
    for path in files:
        cited |= set(re.findall(r"(?<![\w.])src\(\s*['\"](\w+)['\"]", path.read_text()))
    assert len(cited) >= 25
    assert cited <= set(registry["provenance"]), cited - set(registry["provenance"])
