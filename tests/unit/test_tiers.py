"""The one tier system (numerics/tiers.py): crafted values on each side of every tier's boundary,
for the relative (scale), absolute (bounded) and interval tiers, and the agreement of Table 1's
verdict with the sample-size study's "reaches" rule."""

import math

import pytest

from crl_approx.analyses import sample_size
from crl_approx.numerics import tiers
from crl_approx.render import summary
from crl_approx.render.verdicts import cell

P = 1.0e-5  # a paper value of a positive scale quantity


@pytest.mark.parametrize(
    ("ours", "sd", "tier"),
    [
        (1.0004e-5, None, tiers.MATCH),  # 1.000e-05 at 4 significant digits
        (1.0006e-5, None, tiers.CLOSE),  # 1.001e-05: no longer the printed digits
        (1.1e-5, None, tiers.CLOSE),  # ratio 1.10 exactly: the boundary is inside
        (1.1001e-5, None, tiers.ORDER),
        (0.9e-5, None, tiers.CLOSE),
        (0.8999e-5, None, tiers.ORDER),
        (5.0e-5, 10e-5, tiers.DIFFERS),  # inside a huge interval but 5× off: not unresolved
        (3.16e-5, None, tiers.ORDER),  # a factor 3.16 < 10^0.5
        (3.163e-5, None, tiers.DIFFERS),  # a factor 3.163 > 10^0.5 = 3.1623
        (0.3163e-5, None, tiers.ORDER),
        (0.3162e-5, None, tiers.DIFFERS),
        (0.0, None, tiers.DIFFERS),
        (-1e-5, None, tiers.DIFFERS),
        (math.nan, None, tiers.NONE),
    ],
)
def test_scale_tiers_at_their_boundaries(ours, sd, tier):
    assert tiers.scale_tier(ours, P, sd, n=3) == tier


# three seeds: t(0.975, 2) = 4.302653 (tables), so the 95 % half-width is 4.302653·sd/√3
T2 = 4.302653


def test_the_seed_interval_is_students_t_of_the_mean():
    assert tiers.seed_half_width(1.0, 3) == pytest.approx(T2 / math.sqrt(3), rel=1e-6)
    assert tiers.seed_half_width(1.0, 2) == pytest.approx(12.706205 / math.sqrt(2), rel=1e-6)
    assert math.isnan(tiers.seed_half_width(1.0, 1)) and math.isnan(tiers.seed_half_width(None, 3))


@pytest.mark.parametrize(
    ("ours", "sd", "n", "tier"),
    [
        # the gap 0.3e-5 against half-widths just above / below it
        (1.3e-5, 0.3e-5 * math.sqrt(3) / T2 * 1.0001, 3, tiers.UNRESOLVED),
        (1.3e-5, 0.3e-5 * math.sqrt(3) / T2 * 0.9999, 3, tiers.ORDER),
        (0.7e-5, 0.3e-5 * math.sqrt(3) / T2 * 1.0001, 3, tiers.UNRESOLVED),
        # the old "within one sd" admitted |gap| = sd; the mean's interval over 12 seeds is narrower
        (1.3e-5, 0.3e-5, 12, tiers.ORDER),
        (1.3e-5, 0.3e-5, 1, tiers.ORDER),  # one seed: no interval
        (1.3e-5, 0.3e-5, None, tiers.ORDER),
        (2.5e-5, 2.0e-5, 3, tiers.UNRESOLVED),  # 2.5×, wide interval: unresolved, no reach
        (1.05e-5, 1.0e-5, 3, tiers.CLOSE),  # within 10 % stays close whatever the sd
    ],
)
def test_the_unresolved_tier_reads_the_seed_interval(ours, sd, n, tier):
    got = tiers.scale_tier(ours, P, sd, n=n)
    assert got == tier
    if got == tiers.UNRESOLVED:
        assert not tiers.reaches(got) and tiers.css(got) == "order"


def test_a_missing_paper_value_has_no_tier():
    assert tiers.scale_tier(1e-5, None) == tiers.NONE
    assert tiers.bounded_tier(0.9, None, 2) == tiers.NONE
    assert tiers.interval_tier(None, 0.1, 0.2) == tiers.NONE


@pytest.mark.parametrize(
    ("ours", "tier"),
    [
        (0.975, tiers.MATCH),  # half a unit of the last printed digit
        (0.9651, tiers.MATCH),
        (0.9752, "within ±0.02"),
        (0.99, "within ±0.02"),  # two units exactly
        (0.9901, tiers.DIFFERS),
        (0.95, "within ±0.02"),
        (0.9499, tiers.DIFFERS),
        (0.873, tiers.DIFFERS),  # a relative 10 % would admit it
        (0.31, tiers.DIFFERS),  # "same order of magnitude" would admit it
    ],
)
def test_bounded_tiers_are_absolute_at_the_printed_precision(ours, tier):
    assert tiers.bounded_tier(ours, 0.97, 2) == tier


def test_bounded_tiers_scale_with_the_printed_decimals():
    assert tiers.bounded_tier(0.8790, 0.878890, 6) == tiers.DIFFERS  # 110 units of 1e-6
    assert tiers.bounded_tier(0.8788904, 0.878890, 6) == tiers.MATCH
    assert tiers.bounded_tier(0.6530, 0.6528, 4) == "within ±0.0002"
    assert tiers.bounded_tier(0.6531, 0.6528, 4) == tiers.DIFFERS


@pytest.mark.parametrize(
    ("paper", "tier"),
    [
        (0.85, "inside our 95% interval"),  # the lower end is inside
        (0.93, "inside our 95% interval"),
        (0.85 - 1e-9, "outside our 95% interval"),
        (0.93 + 1e-9, "outside our 95% interval"),
    ],
)
def test_interval_tiers_at_the_ends(paper, tier):
    assert tiers.interval_tier(paper, 0.85, 0.93, 0.95) == tier


def test_which_tiers_reach_the_paper():
    assert all(map(tiers.reaches, (tiers.MATCH, tiers.CLOSE, "within ±0.02")))
    assert tiers.reaches(tiers.inside(0.95))
    misses = (tiers.ORDER, tiers.DIFFERS, tiers.outside(0.95), tiers.UNRESOLVED)
    assert not any(map(tiers.reaches, misses))
    assert not tiers.reaches(tiers.DERIVED) and tiers.css(tiers.DERIVED) == "none"


@pytest.mark.parametrize("ratio", [0.5, 0.867, 0.9, 0.95, 1.05, 1.1, 1.2, 1.5, 3.0, 10.0])
@pytest.mark.parametrize("sd_share", [math.nan, 0.05, 0.14, 0.3, 2.0])
def test_table1_and_the_study_give_the_same_verdict(ratio, sd_share):
    """Table 1's cell and the study's "reaches" rule read one tier: a cell reaches in the study
    exactly when Table 1 shows it in a reaching (green) tier."""
    ours, sd = ratio * P, sd_share * ratio * P
    c = cell(ours, P, sd, n=3)
    label, reaches = sample_size.reach_verdict(ours, sd, P, 3)
    assert reaches == (c["css"] == "match")
    assert reaches == label.startswith("reaches")
    assert (c["verdict"] == tiers.UNRESOLVED) == label.startswith(tiers.UNRESOLVED)


def test_the_derived_rate_is_shown_but_not_counted():
    lines = [
        {"verdict": tiers.inside(0.95), "css": "match"},
        {"verdict": tiers.DERIVED, "css": "none"},
        {"verdict": tiers.DIFFERS, "css": "differs"},
        {"verdict": tiers.CLOSE, "css": "match"},
    ]
    got = summary.counts(lines)
    assert sum(c["n"] for c in got) == 3
    assert tiers.DERIVED not in {c["verdict"] for c in got}
    assert got[-1]["verdict"] == tiers.DIFFERS  # reaching tiers first, misses last


def test_the_legend_states_the_rules_the_tiers_apply():
    """The numbers the report's legend prints, read back from its text, are the boundaries the
    tier functions apply: a value just inside each stated bound gets the tier, one just outside
    does not (a legend that drifted from the code, or code from the legend, fails here)."""
    import re

    rules = dict(tiers.legend())
    close = float(re.search(r"≤ ([0-9.]+)", rules[tiers.CLOSE]).group(1))
    factor = float(re.search(r"factor ([0-9.]+)", rules[tiers.ORDER]).group(1))
    units = int(re.search(r"≤ (\d+) units", rules["within ±u"]).group(1))
    paper = 2.0
    assert tiers.scale_tier(paper * (1 + 0.98 * close), paper) == tiers.CLOSE
    assert tiers.scale_tier(paper * (1 + 1.02 * close), paper) == tiers.ORDER
    assert tiers.scale_tier(paper * 0.99 * factor, paper) == tiers.ORDER
    assert tiers.scale_tier(paper * 1.01 * factor, paper) == tiers.DIFFERS
    assert tiers.scale_tier(paper / (1.01 * factor), paper) == tiers.DIFFERS
    # bounded quantities, printed with 2 decimals: units of 0.01
    assert tiers.bounded_tier(0.5 + (units - 0.1) * 0.01, 0.5, 2) == tiers.within_abs(2)
    assert tiers.bounded_tier(0.5 + (units + 0.1) * 0.01, 0.5, 2) != tiers.within_abs(2)


def test_a_wide_interval_does_not_reach():
    """Inside a narrow interval reaches; inside one wider than ±10 % of the paper's value does
    not (a wide interval contains anything); outside is a miss."""
    assert tiers.interval_tier(0.88, 0.80, 0.96) == tiers.inside(0.95)  # half-width 0.08 < 0.088
    wide = tiers.interval_tier(0.88, 0.70, 1.10)  # half-width 0.20
    assert wide == tiers.too_wide(0.95) and not tiers.reaches(wide) and not tiers.misses(wide)
    assert tiers.css(wide) == "order"
    assert tiers.misses(tiers.interval_tier(0.88, 0.90, 0.95))


def test_a_tier_is_looked_up_not_parsed():
    """Only labels the tiers print count: a text that merely begins like one is no tier."""
    assert tiers.reaches(tiers.inside(0.95)) and tiers.reaches(tiers.within_abs(2))
    assert tiers.misses(tiers.outside(0.9))
    assert tiers.css(tiers.too_wide(0.95)) == "order"
    for text in ("within ±0.02 of something else", "inside our interval, roughly", "outside"):
        assert not tiers.reaches(text) and not tiers.misses(text)
        assert tiers.css(text) == "differs"
