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
    row["widths"] = "8 32 128"
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


def _synthetic_runs(curves: dict, two_x=None, seeds=(0, 1, 2), falling=()) -> pd.DataFrame:
    """A runs table as analyses.widths.runs_table writes it: ``curves[(world, tower)]`` maps a
    width to its seed-mean excess (1 % seed spread); converged validation histories (best
    checkpoint mid-run) except for the cells (world, tower, width, data) in ``falling``, whose
    validation loss still falls at the end; ``two_x``: the LCGM widest cell's excess on twice
    the pairs."""
    rows = []
    converged = [2.0, 1.5, 1.2, 1.1, 1.05, 1.0, 1.02, 1.01, 1.03, 1.02]
    still_falling = [2.0, 1.8, 1.6, 1.4, 1.2, 1.0, 0.8, 0.6, 0.4, 0.2]
    cells = [(k[0], k[1], w, "1x", v) for k, c in curves.items() for w, v in c.items()]
    if two_x is not None:
        one, two, width = two_x
        cells += [("lcgm", "both", width, "1x", one), ("lcgm", "both", width, "2x", two)]
    for world, tower, width, data, v in cells:
        hist = still_falling if (world, tower, width, data) in falling else converged
        for s in seeds:
            rows.append(
                {
                    "world": world,
                    "tower": tower,
                    "width": width,
                    "data": data,
                    "seed": s,
                    "excess": v * (1 + 0.01 * (s - 1)),
                    "final_val_loss": 1.02,
                    "steps": 100,
                    "val_losses": hist,
                    "source": "synthetic",
                }
            )
    return pd.DataFrame(rows)


def _assemble(runs, eps_levels):
    from crl_approx.analyses import widths as aw
    from crl_approx.analyses import widths_verdicts as av

    cells = aw.cell_table(runs, 128)
    sweeps = sorted(
        {(w, t) for w, t in zip(runs["world"], runs["tower"], strict=True) if t != "both"}
    )
    eps = pd.DataFrame([r for s in sweeps for r in aw.eps_rows(runs, *s, eps_levels)])
    theory = {"beta": 4.0, "lcgm": {"d1": 16, "d2": 16}, "gmm": {"d1": 1, "d2": 1}}
    fits = pd.DataFrame([aw.fit_row(runs, cells, *s, eps_levels, 0.95, theory) for s in sweeps])
    return av.verdicts(fits, eps, runs, cells, 0.95).set_index("prediction")


def test_the_assembly_runs_end_to_end_on_a_three_width_sweep():
    """fit_row, eps_rows and the verdicts on a small synthetic sweep (three widths per LCGM tower,
    two per mixture tower). Mutation caught (seen failing): a
    keyword the saturation rule no longer takes (the assembly crashed on main)."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.02, 128: 0.01},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.0125},
        ("gmm", "f"): {32: 1e-5, 128: 1e-5},
        ("gmm", "g"): {32: 1e-5, 128: 1e-5},
    }
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01])
    assert list(v.index) == ["W1", "W2", "W3"]
    assert v.loc["W3", "verdict"] == "holds"  # flat mixture curves saturate by 32


def test_w1_counts_no_growth_only_for_a_tower_that_reaches_what_the_other_reaches():
    """W1 as registered (docs/widths.md): a tower's growth is 0 when it reaches every ε the other
    reaches, at the smallest width. Here f is flat at 0.04 and never reaches 0.02 while g does:
    f does not "grow more slowly", W1 must not hold. Mutation caught (seen failing): the clause
    read as "every ε this tower reaches" (f's one level 0.05 at the smallest width → q_f = 0)."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.04, 128: 0.04},
        ("lcgm", "g"): {8: 0.2, 32: 0.03, 128: 0.004},
    }
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01, 0.005])
    assert v.loc["W1", "verdict"] == "unresolved: too few ε reached inside the grid"


@pytest.mark.parametrize(("two", "verdict"), [(0.009, "holds"), (0.004, "fails")])
def test_the_data_check_reads_the_estimation_error_not_the_removed_part(two, verdict):
    """If the estimation error falls like 1/n, doubling the pairs removes half of it: the error at
    1x is twice the removed part. The widest cell's excess 0.0095 (the smallest ε reached: 0.01);
    removing 0.0055 (→ 0.004) leaves an error of ~0.011 at 1x, above 0.01: "fails". Mutation
    caught (seen failing): comparing the removed part itself with ε (0.0055 < 0.01: "holds")."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.02, 128: 0.0095},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.0095},
    }
    v = _assemble(_synthetic_runs(curves, two_x=(0.0095, two, 128)), [0.1, 0.05, 0.02, 0.01])
    assert v.loc["data check", "verdict"] == verdict


def test_each_world_is_read_on_its_own_ladder():
    """The mixture's excess lies far below the LCGM's, so it has its own ladder (widths.gmm_eps).
    On a mixture curve 1e-3 / w (widths 4 … 128) the width for ε = 1e-4 is 10 exactly (log-log
    interpolation is exact on a power law) and the growth exponent is 1; the LCGM keeps
    widths.eps. Mutation caught (seen failing): the mixture read on widths.eps (every level
    reached at the smallest width, no row at 1e-4)."""
    from crl_approx.analyses import widths as aw
    from crl_approx.analyses import widths_verdicts as av

    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.02, 128: 0.01},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.0125},
        ("gmm", "f"): {w: 1e-3 / w for w in (4, 8, 32, 128)},
    }
    runs = _synthetic_runs(curves)
    cells = sorted({(r.world, r.tower, r.width, r.data) for r in runs.itertuples()})
    config = {"eps": [0.1, 0.03, 0.01], "gmm_eps": [1e-4, 3e-5, 1e-5], "ci_level": 0.95}
    theory = {"beta": 4.0, "lcgm": {"d1": 16, "d2": 16}, "gmm": {"d1": 1, "d2": 1}}
    eps, fits, _ = av.tables(runs, aw.cell_table(runs, 128), cells, config, theory)
    mix = eps[eps["world"] == "gmm"].set_index("eps")
    assert list(mix.index) == [1e-4, 3e-5, 1e-5]
    assert mix.loc[1e-4, "status"] == "reached"
    assert mix.loc[1e-4, "width"] == pytest.approx(10.0, rel=1e-9)
    assert sorted(set(eps.loc[eps["world"] == "lcgm", "eps"])) == [0.01, 0.03, 0.1]
    q = fits.set_index(["world", "tower"]).loc[("gmm", "f"), "power_exponent"]
    assert q == pytest.approx(1.0, rel=1e-6)


def test_a_level_crossed_and_lost_again_is_shown_not_fitted():
    """A curve that dips below ε and rises above it again at a wider width (the LCGM's held-out
    excess rises past width 32 where estimation error takes over) does not "reach" ε: the level
    is "lost" and left out of the growth fit. Known answers: e halves per doubling from 8 to 32,
    so ε = 0.03 is reached at 8·0.04/0.03 = 10.667 (log-log interpolation is exact there); 0.009
    at 32 but 0.012 at 128 loses ε = 0.01. Mutation caught (seen failing): the first crossing
    read as reached (0.01 then counts as a fitted level)."""
    widths, excess = [8, 16, 32, 64, 128], [0.04, 0.02, 0.009, 0.0095, 0.012]
    width, status = wn.width_to_reach(widths, excess, 0.03)
    assert status == wn.REACHED and width == pytest.approx(8 * 0.04 / 0.03, rel=1e-12)
    assert wn.width_to_reach(widths, excess, 0.01)[1] == wn.LOST
    per_seed = [[v, v] for v in excess]
    rows = wn.ladder(widths, per_seed, [0.03, 0.015, 0.01])
    assert list(wn.common_levels(rows)) == [0.03, 0.015]
    assert wn.growth_fit(rows, "power", 0.95)["n_levels"] == 2


def test_w3_fails_on_one_converged_tower_whatever_the_other_did():
    """W3 needs both towers saturated by 32: g's converged "not saturated" (≥ 128) falsifies it
    even when f's cells did not converge. Mutation caught (seen failing): gating W3 on all cells
    at once ("unresolved: not converged")."""
    fits = _fits("unresolved", "not saturated", True)
    fits.loc[fits["tower"] == "f", "converged"] = False
    assert widths_verdicts.w3(fits)["verdict"] == "fails"
    fits.loc[fits["tower"] == "g", "converged"] = False
    assert widths_verdicts.w3(fits)["verdict"] == "unresolved: not converged"


def test_w1_needs_three_widths():
    """Between two widths every ε lies on one log-log segment, a power law by construction: W1
    must not read a growth exponent off it. Here f reaches every level at the smallest width
    (q_f = 0) and g's one segment holds every level, so without the guard W1 would "hold".
    Mutation caught (seen failing): dropping the three-width guard."""
    curves = {("lcgm", "f"): {8: 0.005, 128: 0.004}, ("lcgm", "g"): {8: 0.2, 128: 0.002}}
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01])
    assert v.loc["W1", "verdict"] == "unresolved: fewer than three widths"


def test_the_data_check_is_gated_by_convergence():
    """A data check on runs whose validation loss still falls says nothing about estimation
    error: "unresolved: not converged", not "holds". Mutation caught (seen failing): the check
    without the gate."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.02, 128: 0.0095},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.0095},
    }
    runs = _synthetic_runs(curves, two_x=(0.0095, 0.009, 128))
    assert _assemble(runs, [0.1, 0.05, 0.02, 0.01]).loc["data check", "verdict"] == "holds"
    runs = _synthetic_runs(
        curves, two_x=(0.0095, 0.009, 128), falling={("lcgm", "both", 128, "2x")}
    )
    verdict = _assemble(runs, [0.1, 0.05, 0.02, 0.01]).loc["data check", "verdict"]
    assert verdict == "unresolved: not converged"


def test_table2_curve_goes_through_the_narrowest_converged_cell():
    """The Table 2 shape is scaled through the narrowest converged cell at or below the smallest ε
    the tower keeps, not the reused widest one (on the LCGM that cell's excess is mostly
    estimation error), and a power law through it is the known curve e0·(w/w0)^(−1/q).
    Mutations caught (seen failing): anchoring at the reused cell at train.width; ignoring ε."""
    from crl_approx.figures.widths import anchor, table2_curve

    sub = pd.DataFrame(
        {
            "width": [4, 8, 32, 128],
            "excess_mean": [0.3, 0.05, 0.02, 0.03],
            "converged": [False, True, True, True],
            "reused": [False, False, False, True],
        }
    )
    assert anchor(sub) == (8.0, 0.05)
    assert anchor(sub, 0.025) == (32.0, 0.02)  # the narrowest converged cell at or below ε kept
    curve = table2_curve("power", 0.5, 8.0, 0.05, [8.0, 16.0])
    assert curve == pytest.approx([0.05, 0.05 / 4])


def test_growth_is_fitted_seed_by_seed_on_the_levels_every_seed_keeps():
    """Two seeds with different power laws (w needed ∝ (1/ε)^q: q = 1 and 0.5, on the exact
    curves e = c·w^(−1/q)); seed 1 also loses ε = 0.01 at the widest width. The exponent is the
    mean of the seeds' own fits on the levels both keep (0.75), not a fit on the seed means and
    not on one seed's extra level. Mutations caught (seen failing): fitting the seed means; the
    union of the seeds' levels."""
    widths = [4, 8, 16, 32, 64]
    s0 = [0.4 / w for w in widths]  # q = 1
    s1 = [0.4 / w**2 * 4 for w in widths]  # q = 0.5, 0.1 at 4
    s1[-1] = 0.02  # rises again: ε = 0.01 is lost for seed 1
    rows = wn.ladder(widths, [list(p) for p in zip(s0, s1, strict=True)], [0.05, 0.02, 0.01])
    assert list(wn.common_levels(rows)) == [0.05, 0.02]
    fit = wn.growth_fit(rows, "power", 0.95)
    assert fit["per_seed"] == pytest.approx([1.0, 0.5], rel=1e-9)
    assert fit["exponent"] == pytest.approx(0.75, rel=1e-9)


def test_the_data_check_compares_with_levels_kept_not_levels_lost():
    """f crosses 0.01 at width 32 and loses it at 128: the smallest ε kept is 0.02. An estimation
    error of ~0.015 (twice 0.0075 removed) lies below 0.02 ("holds"), but above the lost 0.01.
    Mutation caught (seen failing): the smallest level merely crossed ("fails")."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.009, 128: 0.012},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.012},
    }
    runs = _synthetic_runs(curves, two_x=(0.012, 0.0045, 128))
    v = _assemble(runs, [0.1, 0.05, 0.02, 0.01])
    assert v.loc["data check", "verdict"] == "holds"
    assert "smallest ε reached and kept, 0.02" in v.loc["data check", "measured"]


def test_w1_does_not_read_an_exponent_off_one_grid_segment():
    """Three widths, but every level g reaches lies between 8 and 32: its exponent is that one
    segment's slope, a power law by construction, and f (every level at the smallest width)
    counts as q = 0, so without the guard W1 would "hold". Mutation caught (seen failing):
    dropping the segment guard."""
    curves = {
        ("lcgm", "f"): {8: 0.005, 32: 0.004, 128: 0.003},
        ("lcgm", "g"): {8: 0.2, 32: 0.002, 128: 0.001},
    }
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01])
    assert v.loc["W1", "verdict"] == "unresolved: the levels lie on one log-log segment"


def test_w2_needs_three_widths():
    """On two widths the saturation rule's trend check extends one segment: g's resolvable fall
    from 8 to 128 reads "≥ 128" and f's unresolved range ends at 128, so the order would be
    decided by a tie at the grid's end ("holds"). Mutation caught (seen failing): dropping the
    guard."""
    curves = {("lcgm", "f"): {8: 0.017, 128: 0.0114}, ("lcgm", "g"): {8: 0.034, 128: 0.0114}}
    runs = _synthetic_runs(curves)
    v = _assemble(runs, [0.1, 0.03, 0.01])
    assert v.loc["W2", "verdict"] == "unresolved: fewer than three widths"
