"""Experiment W: the width-to-ε inversion against a known answer, the shape test on synthetic
polylog and power curves, the per-tower widths of the towers, the reuse of the default-width cell
(a dry run's job counts) and the verdicts' convergence gate."""

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import REPO, run_snakemake
from crl_approx.analyses import widths_verdicts
from crl_approx.numerics import widths as wn
from crl_approx.training.towers import build_model

LADDER = [0.1, 0.03, 0.01, 0.003, 0.001]
GRID = 2.0 ** np.arange(2, 14, 0.25)  # 4 … 8192, dense: interpolation error is small


def test_a_power_law_curve_is_inverted_exactly():
    """e(w) = c·w^(−a) is a straight line in log-log, so the interpolated width is (c/ε)^(1/a)
    exactly. Mutation caught: interpolating linearly in w or in e (not log-log)."""
    c, a = 5.0, 0.7
    widths = [4, 16, 64, 256]
    excess = [c * w**-a for w in widths]
    for eps in (1.0, 0.5, 0.2, 0.11):
        width, status = wn.width_to_reach(widths, excess, eps)
        assert status == wn.REACHED
        assert width == pytest.approx((c / eps) ** (1 / a), rel=1e-12)


def test_bounds_are_said_as_such_not_extrapolated():
    """Mutation caught: an ε below the grid's last excess returning the widest width, or an ε
    above the first one interpolated outside the grid."""
    widths, excess = [8, 32, 128], [0.2, 0.1, 0.05]
    assert wn.width_to_reach(widths, excess, 0.3) == (8.0, wn.AT_MIN)
    assert wn.width_to_reach(widths, excess, 0.01) == (math.inf, wn.NOT_REACHED)
    rows = wn.ladder(widths, [[0.2, 0.25], [0.1, 0.1], [0.05, 0.04]], [0.22])
    assert rows[0]["status"] == wn.REACHED  # the mean 0.225 is above 0.22
    assert rows[0]["seed_lo"] == 8.0  # seed 0 reaches 0.22 at the smallest width
    assert rows[0]["seed_hi"] > 8.0


def _seeds(law_excess, scales):
    """Per-seed excess on GRID (rows: widths, columns: seeds), each seed its own constant."""
    return np.array([[law_excess(w, c) for c in scales] for w in GRID])


POWER = lambda w, c: c / w  # noqa: E731  width(ε) = c/ε: q = 1
POLYLOG = lambda w, c: math.exp(-math.sqrt(w / c))  # noqa: E731  width(ε) = c·log²(1/ε): p = 2


@pytest.mark.parametrize(
    ("law", "shape", "column", "exponent"),
    [(POWER, "power", "power", 1.0), (POLYLOG, "polylog", "polylog", 2.0)],
    ids=["power", "polylog"],
)
def test_the_shape_test_tells_polylog_from_power(law, shape, column, exponent):
    """width(ε) = c/ε is a power law (q = 1), width(ε) = c·log²(1/ε) a polylog (p = 2); three
    seeds with different c. The shape test names the law that generated the curve, and the
    growth fit on that law's axis recovers its exponent. Mutation caught: swapping the two axes
    (AXES), or the rejection's sign or band."""
    rows = wn.ladder(GRID, _seeds(law, [2.5, 3.0, 3.5]), LADDER)
    assert all(r["status"] == wn.REACHED for r in rows)
    assert wn.shape_test(rows, 0.95, len(GRID))["shape"] == shape
    fit = wn.growth_fit(rows, column, 0.95)
    assert fit["exponent"] == pytest.approx(exponent, rel=0.02)  # log-log interpolation error


def test_two_widths_leave_the_shape_untested():
    """Every ε between two widths lies on one log-log segment, a power law by construction.
    Mutation caught: dropping the three-widths guard (the test would then say "power")."""
    widths = [8, 128]
    rows = wn.ladder(widths, [[0.5, 0.6, 0.55], [0.001, 0.0012, 0.0011]], LADDER)
    assert wn.shape_test(rows, 0.95, len(widths))["shape"].startswith("unresolved")


def test_one_tower_can_be_narrower_and_the_default_is_unchanged():
    """width_f / width_g set one tower's hidden width; without them both towers are train.width
    and the parameters are bitwise those of the plain config. Mutation caught: applying width_f
    to g, or drawing the towers in another order."""
    train = {"width": 16, "depth": 3}
    plain = build_model([0, 1], 2, 3, 4, train)
    same = build_model([0, 1], 2, 3, 4, train | {"width_f": 16, "width_g": 16})
    for p, q in zip(plain.parameters(), same.parameters(), strict=True):
        assert torch.equal(p, q)
    narrow = build_model([0], 2, 3, 4, train | {"width_f": 5})
    assert [tuple(p.shape) for p in narrow.f][::2] == [(1, 2, 5), (1, 5, 5), (1, 5, 4)]
    assert [tuple(p.shape) for p in narrow.g][::2] == [(1, 3, 16), (1, 16, 16), (1, 16, 4)]


def _fits(status_f, status_g, converged):
    row = dict(saturation_lo=1, saturation_hi=8, converged=converged, saturation="≤ 8")
    return pd.DataFrame(
        [
            row | {"tower": "f", "saturation_status": status_f},
            row
            | {
                "tower": "g",
                "saturation_status": status_g,
                "saturation_lo": 128,
                "saturation_hi": math.inf,
                "saturation": "≥ 128",
            },
        ]
    )


def test_a_miss_on_unconverged_runs_is_unresolved_not_a_failure():
    """W3 (both towers saturate by 32) fails when g's saturation lies at ≥ 128; on runs that did
    not converge the same numbers are "unresolved: not converged". Mutation caught: dropping
    the gate."""
    assert widths_verdicts.w3(_fits("saturated", "not saturated", True))["verdict"] == "fails"
    gated = widths_verdicts.w3(_fits("saturated", "not saturated", False))["verdict"]
    assert gated == "unresolved: not converged"
    assert widths_verdicts.w2(_fits("saturated", "not saturated", True))["verdict"] == "holds"


def test_the_default_width_cell_is_reused_not_retrained(tmp_path):
    """A dry run of the smoke config plans one train_widths job per narrower width, tower and
    world, plus the data check on twice the pairs, and none at train.width on the configured
    pairs: that cell is train_encoder's run. Mutation caught: widths_reused returning False (the
    count becomes 7 and a width~32/data~1x job appears)."""
    smoke = REPO / "config" / "smoke.yaml"
    proc = run_snakemake(tmp_path, "-n", "--configfile", str(smoke), "--", "assemble_widths")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    count = re.search(r"^train_widths\s+(\d+)$", out, re.M)
    assert count and int(count.group(1)) == 5  # lcgm f, g at 8; gmm f, g at 8; the 2x check
    assert "width~32/data~1x" not in out
    assert "width~32/data~2x" in out
    reused = "results/encoders/lcgm/objective~samples/score~inner/dim~4/seed~0/metrics.json"
    assert reused in out  # the reused cell's file is train_encoder's output
