"""Report helpers (verdicts, formatting) and the theory table."""

import math

import numpy as np
import pytest

from crl_approx.numerics.theory import sizes
from crl_approx.render.verdicts import cell, fmt, verdict


def test_fmt_prints_like_the_paper():
    assert fmt(0.49024679) == "4.902e-01"
    assert fmt(5.5869815e-07) == "5.587e-07"
    assert fmt(float("nan")) == "—" and fmt(None) == "—"


@pytest.mark.parametrize(
    ("ours", "paper", "label"),
    [
        (0.49024679, 0.4902, "matches printed digits"),
        (5.5869e-07, 5.587e-7, "matches printed digits"),
        (5.5864e-07, 5.587e-7, "within 10%"),
        (9.942e-3, 9.941e-3, "within 10%"),
        (5.36e-4, 4.616e-4, "same order of magnitude"),  # 1.16x
        (1.6e-4, 1.877e-5, "differs"),  # 8.5x
        (2.9e-5, 9.188e-6, "same order of magnitude"),  # 3.16x is the edge
        (1.0, None, "—"),
    ],
)
def test_verdicts(ours, paper, label):
    assert verdict(ours, paper)[0] == label


def test_cell_reports_mean_sd_and_ratio():
    c = cell(1.0e-2, 9.941e-3, sd=6.9e-6)
    assert c["ours"] == "1.000e-02 ± 6.9e-06"
    assert c["ratio"] == f"{1e-2 / 9.941e-3:.3f}"
    assert c["css"] == "match" and c["verdict"] == "within 10%"


def test_theory_rates():
    t = sizes([0.01], d1=16, d2=16, beta=4.0, k=8).set_index("model")
    # general: D = ε^{-min(d1,d2)/(2β)} = 0.01^{-2} = 1e4
    assert t.loc["general", "D"] == pytest.approx(1e4)
    # anchor: ε^{-(4 + 2)·16/32} = 0.01^{-3}; pseudo-dimension ε^{-48/8} = 0.01^{-6}
    assert t.loc["general", "anchor_size"] == pytest.approx(1e6)
    assert t.loc["general", "pseudo_dimension"] == pytest.approx(1e12)
    # LCGM: D = K, anchor log²(1/ε), target ε^{-d2/(4β)} = 0.01^{-1}
    assert t.loc["lcgm", "D"] == 8
    assert t.loc["lcgm", "anchor_size"] == pytest.approx(math.log(100) ** 2)
    assert t.loc["lcgm", "target_size"] == pytest.approx(100)


def test_asymmetric_dimensions_swap_the_encoder_exponents():
    a = sizes(np.array([0.1, 0.01]), d1=8, d2=16, beta=2.0, k=4).set_index("model")
    b = sizes(np.array([0.1, 0.01]), d1=16, d2=8, beta=2.0, k=4).set_index("model")
    np.testing.assert_allclose(a.loc["general", "anchor_size"], b.loc["general", "target_size"])
    # the LCGM anchor is dimension-free
    np.testing.assert_allclose(a.loc["lcgm", "anchor_size"], b.loc["lcgm", "anchor_size"])


# --- the verdict summary ------------------------------------------------------------------------
def _summary_for(tau: float, mu: float = 1.2):
    """The summary's Table 1 lines for the paper's mixture (mean μ) at temperature τ, computed
    from scratch: spectrum, a stand-in MLP run equal to the truncation, the paper's values."""

    from conftest import REPO
    from crl_approx.analyses.tables import table1
    from crl_approx.config import load_paper_values
    from crl_approx.models.gmm import GaussianMixture
    from crl_approx.numerics.spectrum import operator_spectrum, spectrum_table
    from crl_approx.render.html import table1_rows
    from crl_approx.render.summary import excess_tail_line, table1_lines

    spec = spectrum_table(
        operator_spectrum(GaussianMixture(mu, 1.0, mu, 1.0), 80), [1, 2, 4, 8], tau
    )
    floor = spec[["D"]].assign(rank_d_floor_excess_risk=spec["truncation_excess_risk"])
    runs = spec[["D"]].assign(
        objective="population",
        seed=0,
        mlp_excess_risk=spec["truncation_excess_risk"],
        mlp_l2_distance=spec["l2_truncation_error"],
    )
    paper = load_paper_values(REPO / "workflow" / "resources" / "paper_values.yaml")
    t1 = table1(spec, floor, runs, paper, ["population"], "population")
    lines = table1_lines(table1_rows(t1), "population")
    return {line["item"]: line["verdict"] for line in lines}, excess_tail_line(spec)


def test_the_summary_follows_the_config_not_a_template():
    at_paper, relation = _summary_for(0.5)
    trunc = [k for k in at_paper if "truncation excess" in k]
    assert len(trunc) == 4 and all(at_paper[k] == "matches printed digits" for k in trunc)
    assert relation["verdict"] == "holds"
    # τ = 0.25: the truncation's excess is another number; the spectral tail does not depend on τ
    at_quarter, _ = _summary_for(0.25)
    assert not any(at_quarter[k] == "matches printed digits" for k in trunc)
    tails = [k for k in at_quarter if "spectral tail" in k]
    assert all(at_quarter[k] == "matches printed digits" for k in tails)
    # a weaker signal (μ = 0.6) moves every spectral number off the paper's
    weak, _ = _summary_for(0.5, mu=0.6)
    assert all(weak[k] == "differs" for k in tails + trunc)


def test_the_excess_tail_relation_can_fail():
    import pandas as pd

    from crl_approx.render.summary import excess_tail_line

    ok = pd.DataFrame({"spectral_tail": [1e-2, 1e-4], "truncation_excess_risk": [1e-3, 1e-5]})
    assert excess_tail_line(ok.assign(tau=0.5))["verdict"] == "holds"  # ratio 0.1 <= 0.25
    bad = ok.assign(truncation_excess_risk=[1e-3, 5e-5], tau=0.5)  # ratio 0.5 at D = 2
    assert excess_tail_line(bad)["verdict"] == "fails"


def test_the_calibration_spread_is_read_from_the_points():
    import pandas as pd

    from crl_approx.render.sections import low_d_spread

    points = pd.DataFrame(
        {
            "source": ["checkpoint"] * 4 + ["truncation"],
            "D": [1, 1, 1, 2, 1],
            "contrastive_excess": [1.0e-2, 1.1e-2, 1.0e-1, 5e-3, 1.0],
            "retrieval_excess": [
                1e-6,
                1e-3,
                0.0,
                1e-2,
                1e-9,
            ],  # 0 left out; D = 2 and truncation too
        }
    )
    s = low_d_spread(points)
    assert (s["n"], s["ce_lo"], s["ce_hi"], s["ce_decades"], s["re_decades"]) == (
        3,
        "0.01",
        "0.1",
        "1.0",
        "3.0",
    )


def test_every_report_section_links_an_existing_docs_page():
    """The report's sections point to their docs pages; a renamed or missing page fails here,
    and every experiment page of README's table is linked from the report."""
    import re

    from conftest import REPO

    template = (REPO / "report" / "templates" / "index.html.j2").read_text()
    linked = re.findall(r"\{\{ docs_page\('([\w.]+)'\) \}\}", template)
    assert len(linked) == len(set(linked)) >= 8
    for page in linked:
        assert (REPO / "docs" / page).is_file(), page
    experiments = {"table1.md", "sample_size.md", "lcgm.md", "noise.md", "experiment_r.md"}
    assert experiments | {"dynamics.md", "calibration.md", "cosine.md"} <= set(linked)


def test_the_report_carries_every_docs_page_it_links(registry):
    """build_report reads (and the appendix carries) exactly the pages the template links, in its
    order: the experiments' declarations name them (the workflow parsed by Snakemake), and the
    template's anchors are pages.anchor's."""
    import os

    from conftest import REPO
    from crl_approx.render import pages

    template = (REPO / "report" / "templates" / "index.html.j2").read_text()
    declared = [os.path.basename(p) for e in registry["experiments"].values() for p in e["docs"]]
    assert declared == pages.linked(template)
    assert pages.anchor("experiment_r.md") == "docs-experiment-r"
    assert "href=\"#docs-{{ page[:-3] | replace('_', '-') }}\"" in template


@pytest.mark.parametrize(
    ("count", "text"),
    [(1e7, "10⁷"), (30_000_000, "3·10⁷"), (2_500_000, "2.5·10⁶"), (1e4, "10⁴"), (500, "500")],
)
def test_counts_print_as_powers_of_ten(count, text):
    from crl_approx.render.numbers import pow10

    assert pow10(count) == text


def test_a_budget_interval_reaching_below_1x_is_not_resolved():
    """Issue 26, finding 8: 60.9× [0.60, 6202] where the measured excess is above the band is
    "not resolved"; a tight interval prints the multiple (mutation caught: printing the multiple
    whatever the interval)."""
    from crl_approx.render.study import _budget

    assert _budget(60.9, 0.60, 6202).startswith("not resolved")
    assert _budget(42.1, 3.7, 485).startswith("not resolved")  # wider than ±10 %
    assert _budget(42.1, 40.0, 44.0) == "42.1×"
    assert _budget(42.1, 40.0, float("inf")).startswith("not resolved")  # open to ∞


def test_readme_and_the_report_read_one_budget_rule_and_the_lr_ratios():
    """README's template asks render/study for the reason (it had its own copy of the rule) and
    for the learning-rate ratios (it divided in the template); ratios on a crafted table whose
    answer is known: 6e-3 / 2e-3 = 3 and 1e-3 / 4e-3 = 0.25."""
    import pandas as pd

    from conftest import REPO
    from crl_approx.render.study import budget_unresolved, lr_ratios

    assert "below 1×" in budget_unresolved(60.9, 0.60, 6202)
    assert "wider than ±10 %" in budget_unresolved(42.1, 3.7, 485)
    assert budget_unresolved(42.1, 40.0, 44.0) is None
    table = pd.DataFrame(
        {
            "D": [4, 4, 8, 8, 4],
            "protocol": ["fresh", "fresh", "fresh", "fresh", "n=1024"],
            "budget_multiplier": [1, 1, 1, 1, 1],
            "is_default_lr": [True, False, True, False, True],
            "mlp_excess_risk_mean": [2e-3, 6e-3, 4e-3, 1e-3, 9e-3],
        }
    )
    assert lr_ratios(table) == pytest.approx([3.0, 0.25])
    template = (REPO / "report" / "templates" / "readme.md.j2").read_text()
    assert "budget_unresolved(" in template and "/ 2 > tier_close" not in template
