"""The experiment contract's registry (crl_approx.config.experiments) on crafted declarations:
the derived lists, their order, and the declarations it refuses."""

import pytest

from crl_approx.config import experiments, sections


class Plot:
    """A plot rule as the registry sees it (a rule proxy's output.figure)."""

    def __init__(self, figure):
        self.output = type("Output", (), {"figure": figure})()


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(sections, "EXTRA", {})
    return experiments.Registry()


def test_lists_are_derived_in_the_report_order(fresh):
    # declared out of order: the report's order (sections) wins, own experiments last
    sections.register("mine", "Mine")
    fresh.declare("mine", claims_table="t/mine_claims.csv", keys=["x.y"], local=["a_mine"])
    fresh.declare(
        "lcgm",
        tables={"lcgm_table": "t/lcgm.csv"},
        figures={"fig_lcgm": Plot("f/lcgm.svg")},
        claims={"lcgm_probes": ("t/lcgm.csv", "lcgm_probes")},
        docs=["docs/lcgm.md"],
        local=["assemble_lcgm"],
        targets=[["t/extra.csv", "t/lcgm.csv"]],
    )
    fresh.declare("table1", tables={"table1": "t/table1.csv"}, docs=["docs/table1.md"])
    assert [e.key for e in fresh.experiments] == ["table1", "lcgm", "mine"]
    assert fresh.docs() == ["docs/table1.md", "docs/lcgm.md"]
    assert fresh.local() == ["assemble_lcgm", "a_mine"]
    assert fresh.claim_inputs() == {"lcgm_probes": "t/lcgm.csv"}
    assert fresh.claim_sources() == {"lcgm_probes": "lcgm_probes"}
    assert fresh.own_claims() == {"own_mine": "t/mine_claims.csv"}
    assert fresh.own_keys() == {"own_mine": ("x.y",)}
    assert fresh.section_docs() == {"table1": "docs/table1.md", "lcgm": "docs/lcgm.md"}
    # every table, figure, claims file and target once, in order
    assert fresh.targets() == [
        "t/table1.csv",
        "t/lcgm.csv",
        "f/lcgm.svg",
        "t/extra.csv",
        "t/mine_claims.csv",
    ]
    assert fresh.experiments[2].title == "Mine"
    assert sections.native_category("mine") == f"{len(sections.SECTIONS) + 1:02d} Mine"


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ({"tables": {"a": "x"}}, {"tables": {"a": "y"}}, r"tables \['a'\] already declared by"),
        ({}, {}, "declared twice"),
    ],
)
def test_clashes_are_refused(fresh, first, second, message):
    fresh.declare("table1", **first)
    key = "table1" if "twice" in message else "lcgm"
    with pytest.raises(experiments.ContractError, match=message):
        fresh.declare(key, **second)


def test_an_unknown_section_or_unkeyed_claims_are_refused(fresh):
    with pytest.raises(experiments.ContractError, match="no report section"):
        fresh.declare("nowhere")
    with pytest.raises(experiments.ContractError, match="needs the config keys"):
        fresh.declare("table1", claims_table="c.csv")
    with pytest.raises(ValueError, match="exists already"):
        sections.register("lcgm", "Another LCGM")


def test_the_workflow_declares_every_section_once(registry):
    """Parsed by Snakemake: every section of the report is one declared experiment, and the
    experiments' local rules are Snakemake's (no rule is local by a list of its own)."""
    declared = registry
    assert list(declared["experiments"]) == list(sections.SECTIONS)
    for e in declared["experiments"].values():
        assert set(e["local"]) <= set(declared["local"])
    assert {"all", "paper", "build_report", "plot_digits"} <= set(declared["local"])
    assert "train_encoder" not in declared["local"]
