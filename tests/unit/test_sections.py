"""The report's sections: one declaration (crl_approx.config.sections) gives the native report's
categories in the HTML report's order, its subcategories, and one target per section."""

import pytest

from conftest import REPO, job_counts, run_snakemake
from crl_approx.config.sections import (
    SECTIONS,
    native_category,
    native_subcategory,
    targets,
)


def test_native_categories_sort_in_the_html_reports_order():
    """Snakemake lists categories sorted by name: the numbering makes that the HTML order, which
    is read from the template's section ids, not from the declaration."""
    import re

    template = (REPO / "report" / "templates" / "index.html.j2").read_text()
    ids = [i.replace("-", "_") for i in re.findall(r'<section id="([\w-]+)"', template)]
    html_order = [key for key in ids if key in SECTIONS]
    declared = [key for key in SECTIONS if key != "report"]
    assert html_order == declared
    names = [native_category(key) for key in SECTIONS]
    assert sorted(names) == names and len(set(names)) == len(names)


def test_subcategories_by_kind_and_an_unknown_kind_is_refused():
    assert native_subcategory("results/tables/table1.csv") == "Tables"
    assert native_subcategory("results/figures/excess_vs_d.svg") == "Figures"
    with pytest.raises(ValueError, match="no native report subcategory"):
        native_subcategory("results/model.pt")


def test_a_section_without_outputs_is_an_error_not_an_empty_target():
    full = {native_category(k): [f"results/{k}.csv"] for k in SECTIONS}
    assert targets(full)["lcgm"] == ["results/lcgm.csv"] and "report" not in targets(full)
    del full[native_category("noise")]
    with pytest.raises(ValueError, match="'noise'"):
        targets(full)


@pytest.mark.parametrize(
    "target, jobs",
    [
        ("table2", {"compute_theory_sizes": 1, "plot_theory_sizes": 1, "table2": 1}),
        # the noise section: the Monte Carlo per seed (smoke: 1 seed, 2 worlds), its fit, figure
        ("noise", None),
    ],
)
def test_each_section_is_a_target_by_its_name(tmp_path, target, jobs):
    """`snakemake -n table2` schedules exactly Table 2's jobs; `noise` at least its assembly and
    figure and no training."""
    proc = run_snakemake(
        tmp_path, "-n", target, "--configfile", str(REPO / "config" / "smoke.yaml")
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = job_counts(proc)
    if jobs is not None:
        assert counts == jobs
    else:
        assert counts["assemble_noise"] == counts["plot_noise_exponent"] == 1
        assert not any(rule.startswith("train") for rule in counts), counts
