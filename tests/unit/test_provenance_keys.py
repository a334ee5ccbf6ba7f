"""The provenance registry is derived: a table's config keys are those whose change reruns the
rule that writes it (config/reruns.yaml, which tests/e2e/test_reruns.py checks against real dry
runs), so a key a rule reads cannot be missing from its cells' titles."""

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


def test_every_key_a_tables_rule_reads_is_named_in_its_provenance():
    missing = {
        name: sorted(
            k for k, v in provenance.RERUNS.items() if rule in (v["reads"] or ()) and k not in keys
        )
        for name, (_, rule, keys) in provenance.TABLES.items()
    }
    assert not {name: m for name, m in missing.items() if m}


def test_the_keys_the_hand_kept_registry_missed_are_named():
    """What the registry kept by hand omitted (issue 34): the LCGM design keys Experiment W's
    cells are trained on."""
    widths = provenance.TABLES["widths"][2]
    assert "lcgm.d_x" in widths and "lcgm.n_train" in widths
    assert "gmm.mu_x" in widths
