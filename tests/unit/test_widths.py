"""Experiment W: the width-to-ε inversion against a known answer (with the world's reading limit),
the shape test on synthetic polylog and power curves, the per-tower widths of the towers, the
cells a dry run plans (only the mixture's widest cell reused), each world's floor and the
approximation part above it on crafted runs, the verdicts W1–W7 on crafted tables whose answers
are known without the code, and the verdicts' convergence gate."""

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from conftest import REPO, run_snakemake
from crl_approx.analyses import widths as aw
from crl_approx.analyses import widths_verdicts as av
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
    assert av.w3(_fits("saturated", "not saturated", True))["verdict"] == "fails"
    gated = av.w3(_fits("saturated", "not saturated", False))["verdict"]
    assert gated == "unresolved: not converged"
    assert av.w2(_fits("saturated", "not saturated", True))["verdict"] == "holds"


@pytest.mark.parametrize("scope", ["widest", "sweeps"])
def test_the_plan_trains_each_cell_once_and_reuses_only_the_mixtures_widest(tmp_path, scope):
    """A dry run of the smoke config with two narrower widths per tower and world plans, per LCGM
    world (the LCGM and one per d of widths.dim_sweep.dims), one train_widths job per tower that
    trains both its narrower widths, one widest cell (tower "both" at train.width, which the
    towers' sweeps share, rule train_widths_widest), the widest LCGM cell again at
    widths.budget_check × the steps, and on the mixture one train_widths_gmm job per tower: its
    widest cell is train_encoder's run (Table 1's), reused. Every cell's files are some job's
    output exactly once. No LCGM pool is made for the sweep: its cells draw their pairs in the
    job. Mutations caught: a tower f or g job at train.width (widths_file not mapping it to the
    shared cell) and the LCGM's cells reading results/data/lcgm (both seen failing), the
    mixture's widest cell retrained. With widths.budget_check_scope sweeps every LCGM world's
    cells are planned again at 2x (a second sweep job per tower, a 2x widest cell per world),
    the mixture's are not."""
    import yaml

    from crl_approx.config.reruns import merged

    c = merged(REPO / "config" / "smoke.yaml")
    c["widths"]["grid"] = {"lcgm": [4, 8], "gmm": [2, 8]}
    c["widths"]["budget_check_scope"] = scope
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(c))
    w, width = c["widths"], c["train"]["width"]
    lcgm_worlds = ["lcgm", *(f"lcgm_d{d}" for d in w["dim_sweep"]["dims"])]
    towers = len(w["towers"])
    budgets = ["1x", "2x"] if scope == "sweeps" else ["1x"]
    jobs = {
        "train_widths": len(lcgm_worlds) * towers * len(budgets),
        "train_widths_widest": len(lcgm_worlds) * len(budgets)
        + (scope == "widest" and w["budget_check"] > 1),
        "train_widths_gmm": towers,
    }
    planned = {
        "widest": {"train_widths": 4, "train_widths_widest": 3, "train_widths_gmm": 2},
        "sweeps": {"train_widths": 8, "train_widths_widest": 4, "train_widths_gmm": 2},
    }
    assert jobs == planned[scope]
    proc = run_snakemake(tmp_path, "-n", "--configfile", str(config), "--", "assemble_widths")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    for rule, n in jobs.items():
        count = re.search(rf"^{rule}\s+(\d+)$", out, re.M)
        assert count and int(count.group(1)) == n, rule
    outputs = [
        name.strip()
        for line in out.splitlines()
        if line.strip().startswith("output: results/widths/")
        for name in line.split("output:", 1)[1].split(",")
    ]
    metrics = sorted(o for o in outputs if o.endswith("/seed~0/metrics.json"))
    cells = [(wo, t, x, b) for wo in lcgm_worlds for t in "fg" for x in (4, 8) for b in budgets]
    cells += [("gmm", t, x, "1x") for t in "fg" for x in (2, 8)]
    expected = [f"results/widths/{wo}/tower~{t}/width~{x}/budget~{b}/seed~0/metrics.json"
                for wo, t, x, b in cells]  # fmt: skip
    widest = [(world, b) for world in lcgm_worlds for b in budgets]
    widest += [("lcgm", "2x")] if scope == "widest" else []
    expected += [
        f"results/widths/{wo}/tower~both/width~{width}/budget~{b}/seed~0/metrics.json"
        for wo, b in widest
    ]
    assert metrics == sorted(expected)  # each cell once, in the job of its sweep
    assert not re.search(rf"tower~[fg]/width~{width}/", out)
    assert "results/widths/gmm/tower~both" not in out
    reused = "results/encoders/gmm/objective~population/score~inner/dim~2/seed~0/metrics.json"
    assert reused in out  # the mixture's widest cell is train_encoder's output
    assert "results/encoders/lcgm/" not in out and "results/data/lcgm/" not in out
    assert "make_widths_data" not in out


# --- synthetic runs and the assembly --------------------------------------------------------------
CONVERGED = [2.0, 1.5, 1.2, 1.1, 1.05, 1.0, 1.02, 1.01, 1.03, 1.02]
STILL_FALLING = [2.0, 1.8, 1.6, 1.4, 1.2, 1.0, 0.8, 0.6, 0.4, 0.2]
DESIGN = {"beta": 4.0, "lcgm": {"d1": 16, "d2": 16}, "gmm": {"d1": 1, "d2": 1}}


def _run_row(world, tower, width, budget, seed, excess, hist=CONVERGED) -> dict:
    """One row as analyses.widths.runs_table writes it."""
    return {
        "world": world,
        "tower": tower,
        "width": width,
        "budget": budget,
        "seed": seed,
        "excess": excess,
        "final_val_loss": 1.02,
        "steps": 100,
        "val_losses": hist,
        "source": "synthetic",
    }


def _synthetic_runs(curves: dict, seeds=(0, 1, 2), falling=(), floors=None) -> pd.DataFrame:
    """A runs table: ``curves[(world, tower)]`` maps a width to its seed-mean excess above
    ``floors[world]`` (0 where not given), with a 1 % seed spread on that part; converged
    validation histories (best checkpoint mid-run) except for the cells (world, tower, width) in
    ``falling``, whose validation loss still falls at the end."""
    rows = []
    for (world, tower), c in curves.items():
        base = (floors or {}).get(world, 0.0)
        for width, v in c.items():
            hist = STILL_FALLING if (world, tower, width) in falling else CONVERGED
            for s in seeds:
                excess = base + v * (1 + 0.01 * (s - 1))
                rows.append(_run_row(world, tower, width, "1x", s, excess, hist))
    return pd.DataFrame(rows)


def _floor_table(floors: dict) -> pd.DataFrame:
    """A floors table with the given floor per world and no reading limit."""
    return pd.DataFrame([{"world": k, "floor": v, "read_limit": 0.0} for k, v in floors.items()])


def _assemble(runs, eps_levels, floors=None, design=DESIGN, gmm_eps=(1e-4, 3e-5, 1e-5)):
    """The assembly's tables on synthetic runs: (eps, fits, dims, verdicts by prediction). The
    floors default to 0 on every world but the mixture (1e-9), so the approximation part is the
    excess and every level is read: the verdicts' logic, apart from the floors."""
    worlds = list(dict.fromkeys(runs["world"]))
    floors = floors or {k: 0.0 if aw.is_lcgm(k) else 1e-9 for k in worlds}
    floor_table = _floor_table(floors)
    runs = aw.with_approximation(runs, floor_table)
    table = aw.cell_table(runs, 128)
    cells = sorted({(r.world, r.tower, r.width, r.budget) for r in runs.itertuples()})
    config = {
        "eps": list(eps_levels),
        "gmm_eps": list(gmm_eps),
        "ci_level": 0.95,
        "dim_sweep": {"eps": list(eps_levels)},
    }
    limits = floor_table.set_index("world")["read_limit"].to_dict()
    eps, fits, dims, verdicts = av.tables(runs, table, cells, config, design, limits)
    return eps, fits, dims, verdicts.set_index("prediction")


def test_the_assembly_runs_end_to_end_on_a_three_width_sweep():
    """tables (eps_rows, fit_row, the dimension sweep, the verdicts) on a small synthetic sweep
    (three widths per LCGM tower, two per mixture tower): every prediction W1–W7 has its row, the
    LCGM's first, W5 and W6 unresolved without a dimension sweep. Mutation caught (seen failing):
    a keyword the saturation rule no longer takes (the assembly crashed on main)."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.02, 128: 0.01},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.0125},
        ("gmm", "f"): {32: 1e-5, 128: 1e-5},
        ("gmm", "g"): {32: 1e-5, 128: 1e-5},
    }
    _, _, dims, v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01])
    assert list(v.index) == ["W1", "W2", "W4", "W5", "W6", "W3", "W7"]
    assert v.loc["W3", "verdict"] == "holds"  # flat mixture curves saturate by 32
    assert dims.empty
    for w in ("W5", "W6"):
        assert v.loc[w, "verdict"] == "unresolved"
        assert "no dimension sweep" in v.loc[w, "measured"]


def test_w1_counts_no_growth_only_for_a_tower_that_reaches_what_the_other_reaches():
    """W1 as registered (docs/widths.md): a tower's growth is 0 when it reaches every ε the other
    reaches, at the smallest width. Here f is flat at 0.04 and never reaches 0.02 while g does:
    f does not "grow more slowly", W1 must not hold. Mutation caught (seen failing): the clause
    read as "every ε this tower reaches" (f's one level 0.05 at the smallest width → q_f = 0)."""
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.04, 128: 0.04},
        ("lcgm", "g"): {8: 0.2, 32: 0.03, 128: 0.004},
    }
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01, 0.005])[3]
    assert v.loc["W1", "verdict"] == "unresolved: too few ε reached inside the grid"


def test_each_world_is_read_on_its_own_ladder():
    """The mixture's approximation part lies far below the LCGM's, so it has its own ladder
    (widths.gmm_eps). On a mixture curve floor + 1e-3 / w (widths 4 … 128) the width for
    ε = 1e-4 is 10 exactly (log-log interpolation is exact on a power law, and the floor is
    subtracted) and the growth exponent is 1; the LCGM keeps widths.eps. Mutations caught (seen
    failing): the mixture read on widths.eps (every level reached at the smallest width, no row
    at 1e-4); the excess read instead of the approximation part (10 becomes ≈ 11)."""
    floors = {"lcgm": 0.0, "gmm": 1e-5}
    curves = {
        ("lcgm", "f"): {8: 0.04, 32: 0.02, 128: 0.01},
        ("lcgm", "g"): {8: 0.2, 32: 0.05, 128: 0.0125},
        ("gmm", "f"): {w: 1e-3 / w for w in (4, 8, 32, 128)},
    }
    runs = _synthetic_runs(curves, floors=floors)
    eps, fits, _, _ = _assemble(runs, [0.1, 0.03, 0.01], floors=floors)
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
    assert av.w3(fits)["verdict"] == "fails"
    fits.loc[fits["tower"] == "g", "converged"] = False
    assert av.w3(fits)["verdict"] == "unresolved: not converged"


def test_w1_needs_three_widths():
    """Between two widths every ε lies on one log-log segment, a power law by construction: W1
    must not read a growth exponent off it. Here f reaches every level at the smallest width
    (q_f = 0) and g's one segment holds every level, so without the guard W1 would "hold".
    Mutation caught (seen failing): dropping the three-width guard."""
    curves = {("lcgm", "f"): {8: 0.005, 128: 0.004}, ("lcgm", "g"): {8: 0.2, 128: 0.002}}
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01])[3]
    assert v.loc["W1", "verdict"] == "unresolved: fewer than three widths"


def test_table2_curve_goes_through_the_narrowest_converged_cell():
    """The Table 2 shape is scaled through the narrowest converged cell whose approximation part
    is at or below the smallest ε the tower keeps, not the widest one (whose approximation part
    is the floor's noise), and a power law through it is the known curve e0·(w/w0)^(−1/q).
    Mutations caught (seen failing): anchoring at the widest cell; ignoring ε."""
    from crl_approx.figures.widths import anchor, table2_curve

    sub = pd.DataFrame(
        {
            "width": [4, 8, 32, 128],
            "approx_mean": [0.3, 0.05, 0.02, 0.03],
            "converged": [False, True, True, True],
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


def test_w1_does_not_read_an_exponent_off_one_grid_segment():
    """Three widths, but every level g reaches lies between 8 and 32: its exponent is that one
    segment's slope, a power law by construction, and f (every level at the smallest width)
    counts as q = 0, so without the guard W1 would "hold". Mutation caught (seen failing):
    dropping the segment guard."""
    curves = {
        ("lcgm", "f"): {8: 0.005, 32: 0.004, 128: 0.003},
        ("lcgm", "g"): {8: 0.2, 32: 0.002, 128: 0.001},
    }
    v = _assemble(_synthetic_runs(curves), [0.1, 0.05, 0.02, 0.01])[3]
    assert v.loc["W1", "verdict"] == "unresolved: the levels lie on one log-log segment"


def test_w2_needs_three_widths():
    """On two widths the saturation rule's trend check extends one segment: g's resolvable fall
    from 8 to 128 reads "≥ 128" and f's unresolved range ends at 128, so the order would be
    decided by a tie at the grid's end ("holds"). Mutation caught (seen failing): dropping the
    guard."""
    curves = {("lcgm", "f"): {8: 0.017, 128: 0.0114}, ("lcgm", "g"): {8: 0.034, 128: 0.0114}}
    runs = _synthetic_runs(curves)
    v = _assemble(runs, [0.1, 0.03, 0.01])[3]
    assert v.loc["W2", "verdict"] == "unresolved: fewer than three widths"


# --- the floors and the approximation part (issue 36) ---------------------------------------------
#: the LCGM worlds' curves: excess = floor + c·w^(−a) below the widest width (the towers' own c)
A, C = 0.8, {"f": 0.5, "g": 0.8}
LCGM_FLOORS = {"lcgm": [0.0039, 0.0040, 0.0041], "lcgm_d64": [0.0019, 0.0020, 0.0021]}
#: the LCGM's widest cell at twice the steps: each seed's floor less these
DROPS = [0.0005, 0.0006, 0.0007]
#: the exact best rank-D excess per D (compute_rank_floor's columns), and the mixture's curve
RANK_FLOOR = pd.DataFrame(
    {"D": [1, 2, 4, 8], "rank_d_floor_excess_risk": [0.3, 4.6e-4, 2.0e-6, 1.0e-9]}
)
GMM_ABOVE = [1e-6, 2e-6, 3e-6]  # the widest mixture cell above the rank-2 floor, per seed
GMM_C, GMM_A = 1e-3, 2.0


def _floored_runs() -> pd.DataFrame:
    """Runs as runs_table reads them for the cells widths_cells() lists: each LCGM world's towers
    f, g at widths 2, 4, 8, 16 and at 128 (train.width: the shared widest cell, tower "both",
    whose file the towers' rows at 128 read), the LCGM's widest cell at 2x; the mixture's towers
    at 1, 2, 4, 8 and 128 (the reused run) at D = 2. Excess = floor + c·w^(−a) exactly below
    the widest width, the floor at it."""
    rows = []
    for world, floor in LCGM_FLOORS.items():
        for s, f_s in enumerate(floor):
            for tower in ("f", "g"):
                for w in (2, 4, 8, 16):
                    rows.append(_run_row(world, tower, w, "1x", s, f_s + C[tower] * w**-A))
                rows.append(_run_row(world, tower, 128, "1x", s, f_s))
            rows.append(_run_row(world, "both", 128, "1x", s, f_s))
            if world == "lcgm":
                rows.append(_run_row(world, "both", 128, "2x", s, f_s - DROPS[s]))
    exact = 4.6e-4
    for s, above in enumerate(GMM_ABOVE):
        for tower in ("f", "g"):
            for w in (1, 2, 4, 8):
                rows.append(_run_row("gmm", tower, w, "1x", s, exact + GMM_C * w**-GMM_A))
            rows.append(_run_row("gmm", tower, 128, "1x", s, exact + above))
    return pd.DataFrame(rows)


def test_each_worlds_floor_its_budget_drop_and_its_reading_limit():
    """Known answers: the LCGM floor is the seeds' mean of the widest "both" 1x cell (0.004), the
    budget drop the seeds' mean of (1x − 2x) paired by seed (0.0006) with the Student-t interval
    0.0006 ± t(0.975, 2)·0.0001/√3, the reading limit max(floor, drop / 0.1) = 0.006, on the
    dimension sweep's world too (its floor 0.002, the LCGM's drop); the mixture's floor is the
    exact rank-2 floor of the rank table at D = widths.gmm_dim (4.6e-4), its limit the widest
    cell's excess above it (2e-6). Mutations caught (seen failing): the floor from the 2x cell;
    the drop of the wrong sign; the limit without the drop; the rank table's first row instead of
    D = gmm_dim."""
    table = aw.floors(_floored_runs(), RANK_FLOOR, 2, 0.95).set_index("world")
    assert list(table.index) == ["lcgm", "lcgm_d64", "gmm"]
    lcgm, d64, gmm = (table.loc[w] for w in ("lcgm", "lcgm_d64", "gmm"))
    assert lcgm["floor"] == pytest.approx(0.004, rel=1e-12)
    assert lcgm["widest_excess"] == pytest.approx(0.004, rel=1e-12)
    assert lcgm["widest_sd"] == pytest.approx(1e-4, rel=1e-9)
    assert lcgm["budget_excess"] == pytest.approx(0.0034, rel=1e-12)
    assert lcgm["budget_drop"] == pytest.approx(0.0006, rel=1e-9)
    half = stats.t.ppf(0.975, 2) * 1e-4 / math.sqrt(3)
    assert lcgm["budget_drop_lo"] == pytest.approx(0.0006 - half, rel=1e-9)
    assert lcgm["budget_drop_hi"] == pytest.approx(0.0006 + half, rel=1e-9)
    assert lcgm["read_limit"] == pytest.approx(0.006, rel=1e-9)
    assert d64["floor"] == pytest.approx(0.002, rel=1e-12)
    assert math.isnan(d64["budget_drop"])
    assert d64["read_limit"] == pytest.approx(0.006, rel=1e-9)
    assert gmm["floor"] == 4.6e-4 and gmm["floor_kind"] == "exact rank-2"
    assert gmm["widest_excess"] == pytest.approx(4.6e-4 + 2e-6, rel=1e-12)
    assert math.isnan(gmm["budget_drop"])
    assert gmm["read_limit"] == pytest.approx(2e-6, rel=1e-6)
    # a small drop leaves the floor as the limit: max(0.004, 0.0001 / 0.1 = 0.001)
    runs = _floored_runs()
    two = (runs["budget"] == "2x").to_numpy()
    runs.loc[two, "excess"] = [f - 1e-4 for f in LCGM_FLOORS["lcgm"]]
    assert aw.floors(runs, RANK_FLOOR, 2, 0.95).set_index("world").loc[
        "lcgm", "read_limit"
    ] == pytest.approx(0.004, rel=1e-12)


def _moving_runs(drops) -> pd.DataFrame:
    """_floored_runs with the LCGM's widest cell at 2x lowered by ``drops`` per seed instead."""
    runs = _floored_runs()
    two = (runs["budget"] == "2x").to_numpy()
    runs.loc[two, "excess"] = [f - d for f, d in zip(LCGM_FLOORS["lcgm"], drops, strict=True)]
    return runs


#: the design and the W section the assembly tests below read (the sweep's world at d = 64)
FLOORED_DESIGN = DESIGN | {"lcgm_d64": {"d1": 64, "d2": 64}}
FLOORED_CONFIG = {
    "eps": [0.2, 0.1],
    "gmm_eps": [1e-4, 3e-5],
    "ci_level": 0.95,
    "dim_sweep": {"eps": [0.2, 0.1]},
    "gmm_dim": 2,
}


def _floored_verdicts(raw: pd.DataFrame, doubled: bool = False):
    """The floors table, the dimension table and the verdicts (indexed by prediction) of the
    assembly on ``raw`` as run_assemble computes them: the blanket gate where the floors table
    sets it, or with ``doubled`` the statistic-level gate on the runs' 2x cells."""
    floor_table = aw.floors(raw, RANK_FLOOR, 2, 0.95)
    runs = aw.with_approximation(raw, floor_table)
    limits = floor_table.set_index("world")["read_limit"].to_dict()
    table = aw.cell_table(runs, 128, limits)
    cells = sorted({(r.world, r.tower, r.width, r.budget) for r in raw.itertuples()})
    moves = bool(floor_table["budget_moves"].any())
    args = (raw, RANK_FLOOR, cells, FLOORED_CONFIG, FLOORED_DESIGN, 128, limits)
    twice = av.doubled_verdicts(*args) if doubled else None
    out = av.tables(runs, table, cells, FLOORED_CONFIG, FLOORED_DESIGN, limits, moves, twice)
    return floor_table, out[2], out[3].set_index("prediction", drop=False)


def test_the_doubled_budget_gate_flags_a_floor_that_moves_by_more_than_a_tenth():
    """budget_moves: the widest LCGM cell's 2x drop, paired by seed, against a tenth of its
    excess at B (0.004, so a bar of 0.0004). Known answers: drops 0.0005/0.0006/0.0007 (sd 1e-4)
    give the interval 0.0006 ± 4.303·1e-4/√3 = [0.00035, 0.00085], which reaches under the bar:
    not moving; drops 0.0009/0.001/0.0011 give [0.00075, 0.00125], wholly above: moving, on the
    dimension sweep's world too (the LCGM's check stands for it), never on the mixture; a 2x
    cell that rises by as much (drops −0.0009 … −0.0011) moves it too. Mutations caught (seen
    failing): the bar on the drop's mean instead of its interval's end; the gate on the mixture;
    a rise not counted."""
    table = aw.floors(_floored_runs(), RANK_FLOOR, 2, 0.95).set_index("world")
    assert not table["budget_moves"].any()
    table = aw.floors(_moving_runs([0.0009, 0.001, 0.0011]), RANK_FLOOR, 2, 0.95)
    moves = table.set_index("world")["budget_moves"].to_dict()
    assert moves == {"lcgm": True, "lcgm_d64": True, "gmm": False}
    rise = aw.floors(_moving_runs([-0.0009, -0.001, -0.0011]), RANK_FLOOR, 2, 0.95)
    assert rise.set_index("world").loc["lcgm", "budget_moves"]
    # the mean above the bar but the interval not: 0.0005 ± 4.303·4e-4/√3 reaches under 0
    loose = aw.floors(_moving_runs([0.0001, 0.0005, 0.0009]), RANK_FLOOR, 2, 0.95)
    assert not loose["budget_moves"].any()


def test_a_moving_floor_turns_the_lcgm_verdicts_not_converged_and_keeps_the_rule_s():
    """The assembly on _floored_runs: g needs (0.8/0.5)^(1/0.8) = 1.8 times f's width at every
    level, so W4 holds by its rule. With the widest cell's 2x drop at a quarter of the floor the
    LCGM's verdicts are gated: W4 reads "unresolved: not converged", its ``rule`` column "holds";
    the mixture's W3 and W7 keep their verdicts. With the small drop nothing is gated. The
    claims row says how far the floor moved and the rule's verdict: the drop 0.001 of 0.004,
    −25 % [−31 %, −19 %] (0.001 ± 4.303·1e-4/√3 over 0.004). Mutations caught (seen failing):
    the gate on every world; the rule column overwritten by the gated verdict; the interval's
    ends swapped in the claims text."""
    from crl_approx.analyses.claims import widths as cw

    _, _, still = _floored_verdicts(_floored_runs())
    assert still.loc["W4", "verdict"] == "holds" and still.loc["W4", "rule"] == "holds"
    floor_table, _, moved = _floored_verdicts(_moving_runs([0.0009, 0.001, 0.0011]))
    assert moved.loc["W4", "verdict"] == "unresolved: not converged"
    assert moved.loc["W4", "rule"] == "holds"
    assert not moved.loc["W4", "converged"]
    for p in ("W3", "W7"):
        assert moved.loc[p, "verdict"] == still.loc[p, "verdict"] == moved.loc[p, "rule"]
    t = {"widths_floors": floor_table}
    assert cw._moved(t, moved.loc["W4"]) == "; 2× steps: floor -25% [-31%, -19%]; rule: holds"
    assert cw._moved(t, still.loc["W4"]) == ""


#: the widest cells' drops at 2x per seed: the LCGM's (as _moving_runs), the dimension sweep's
DROPS_2X = {"lcgm": [0.0009, 0.001, 0.0011], "lcgm_d64": [0.0014, 0.0015, 0.0016]}


def _doubled_runs(c_g_2x: float, falling=None) -> pd.DataFrame:
    """_moving_runs (the widest LCGM cell 25 % lower at 2x: the blanket gate's case) with every
    LCGM cell also at 2x (budget_check_scope sweeps): each world's widest cell at 2x its floor
    less DROPS_2X, its towers' excess that floor + C·w^(−A), g's coefficient ``c_g_2x``; the 2x
    cell (world, tower, width) ``falling`` with a validation loss still falling at the end."""
    runs = _moving_runs(DROPS_2X["lcgm"])
    rows = []
    for world, floor in LCGM_FLOORS.items():
        for s, f_s in enumerate(floor):
            f2 = f_s - DROPS_2X[world][s]
            for tower, c in (("f", C["f"]), ("g", c_g_2x)):
                for w in (2, 4, 8, 16):
                    hist = STILL_FALLING if (world, tower, w) == falling else CONVERGED
                    rows.append(_run_row(world, tower, w, "2x", s, f2 + c * w**-A, hist))
                rows.append(_run_row(world, tower, 128, "2x", s, f2))  # the shared widest cell
            if world != "lcgm":  # the LCGM's widest 2x cell is in _moving_runs already
                rows.append(_run_row(world, "both", 128, "2x", s, f2))
    return pd.concat([runs, pd.DataFrame(rows)], ignore_index=True)


def test_with_every_cell_at_twice_the_steps_each_world_reads_its_own_floor_and_drop():
    """Known answers on _doubled_runs: each LCGM world's reading limit is max(floor, its own
    drop / 0.1): 0.01 on the LCGM (drop 0.001), 0.015 on the dimension sweep's world (its own
    drop 0.0015, not the LCGM's); a 2x cell's approximation part is its excess less its world's
    floor at 2x (the 2x widest cell's mean): C·w^(−A) exactly in the seeds' mean, the 1x cells'
    unchanged. Mutations caught (seen failing): the LCGM's drop standing for a world that has
    its own; the 2x cells against the 1x floor."""
    raw = _doubled_runs(C["g"])
    floor_table = aw.floors(raw, RANK_FLOOR, 2, 0.95).set_index("world")
    assert floor_table.loc["lcgm", "read_limit"] == pytest.approx(0.01, rel=1e-9)
    assert floor_table.loc["lcgm_d64", "read_limit"] == pytest.approx(0.015, rel=1e-9)
    assert floor_table.loc["lcgm_d64", "budget_excess"] == pytest.approx(0.0005, rel=1e-9)
    runs = aw.with_approximation(raw, floor_table.reset_index())
    runs = aw.with_doubled_floors(runs, floor_table.reset_index())
    for world in LCGM_FLOORS:
        for budget, floor in (("1x", np.mean(LCGM_FLOORS[world])), ("2x", None)):
            cell = runs[
                (runs["world"] == world)
                & (runs["tower"] == "f")
                & (runs["width"] == 4)
                & (runs["budget"] == budget)
            ]
            assert cell["approx"].mean() == pytest.approx(C["f"] * 4**-A, rel=1e-9)
            if floor is not None:
                assert cell["floor"].iloc[0] == pytest.approx(floor, rel=1e-12)


def test_with_every_cell_at_twice_the_steps_a_verdict_stands_where_its_rule_reads_the_same(
    tmp_path,
):
    """budget_check_scope sweeps: the widest cell's 2x drop (25 % of the floor) would take W4
    back under the blanket gate; with every LCGM cell at 2x on the same curves (g needs 1.8
    times f's width at both budgets) W4 holds, its ``rule_2x`` "holds", and the claims row says
    so ("2× steps: holds again"); W5 fails and W6 holds at both budgets (neither tower grows
    with d: ratio 1 against c = 1.5), their parts shown decided after a CSV round trip. Where
    at 2x g's curve is f's (g/f = 1 at every level: its interval [0, 0] is not above 0) the
    rule reads "unresolved" there: W4 is "unresolved: not converged", rule "holds", and the row
    says what 2x read; so it is where one 2x cell's validation loss still falls (its own
    convergence gate). A verdict undecided at the budget stays as it is whatever 2x reads (the
    gate takes a decision back, never makes one). The mixture's verdicts carry no 2x reading.
    Mutations caught (seen failing): the 2x verdicts read off the budget's cells; the gate
    deciding an unresolved verdict; the blanket gate left on beside the statistic's; the 2x
    cells' convergence ignored."""
    from crl_approx.analyses.claims import widths as cw
    from crl_approx.runtime import write_csv

    def verdicts(raw):
        out = _floored_verdicts(raw, doubled=True)
        assert out[0]["budget_moves"].any()  # the blanket gate's case
        return out

    floor_table, dims, same = verdicts(_doubled_runs(C["g"]))
    assert same.loc["W4", ["verdict", "rule", "rule_2x"]].tolist() == ["holds"] * 3
    assert bool(same.loc["W4", "converged"])
    assert same.loc["W4", "value_2x"] == pytest.approx((C["g"] / C["f"]) ** (1 / A), rel=1e-6)
    t = {"widths_floors": floor_table, "widths_dims": dims}
    assert cw._moved(t, same.loc["W4"]) == "; 2× steps: holds again"
    for p, v in (("W5", "fails"), ("W6", "holds")):
        assert same.loc[p, ["verdict", "rule", "rule_2x"]].tolist() == [v] * 3
    write_csv(same, tmp_path / "v.csv")  # as the claims read it: "" comes back as NaN
    back = pd.read_csv(tmp_path / "v.csv").set_index("prediction", drop=False)
    assert cw._moved(t, back.loc["W5"]) == "; 2× steps: g ×1, fails again"
    parts = cw._dim_parts(t, lambda tower: tower == "g", back.loc["W5"])
    assert parts == [("f, d=64", "holds"), ("g, d=64", "fails")]
    assert cw._doubled(back.loc["W3"]) == ""
    _, _, moved = verdicts(_doubled_runs(C["f"]))
    assert moved.loc["W4", "rule"] == "holds" and moved.loc["W4", "rule_2x"] == "unresolved"
    assert moved.loc["W4", "verdict"] == "unresolved: not converged"
    assert not bool(moved.loc["W4", "converged"])
    assert cw._moved(t, moved.loc["W4"]) == "; 2× steps: unresolved; rule: holds"
    for p in ("W3", "W7"):
        assert moved.loc[p, "rule_2x"] == "" and moved.loc[p, "verdict"] == moved.loc[p, "rule"]
    _, _, falling = verdicts(_doubled_runs(C["g"], falling=("lcgm", "g", 4)))
    assert falling.loc["W4", "rule_2x"] == "unresolved: not converged"
    assert falling.loc["W4", "verdict"] == "unresolved: not converged"
    # the gate on its own: it can take a decision back, never make one
    assert av.budget_agrees("unresolved", "holds") == "unresolved"
    assert av.budget_agrees("fails", "fails") == "fails"
    assert av.budget_agrees("fails", "holds") == "unresolved: not converged"
    # without 2x sweep cells there is nothing to compare: the blanket gate stays
    raw = _moving_runs([0.0009, 0.001, 0.0011])
    cells = sorted({(r.world, r.tower, r.width, r.budget) for r in raw.itertuples()})
    args = (raw, RANK_FLOOR, cells, FLOORED_CONFIG, FLOORED_DESIGN, 128, {})
    assert av.doubled_verdicts(*args) is None


def test_the_width_needed_is_read_on_the_approximation_part_above_the_limit():
    """with_approximation subtracts each world's floor, and eps_rows reads the width at which
    c·w^(−a) = ε: (c/ε)^(1/a) exactly (log-log interpolation is exact on a power law), tower by
    tower; levels under the world's reading limit are "below the floor: not read" (0.005 lies
    above the LCGM's floor 0.004 but under its limit 0.006; the mixture's 1e-6 under its 2e-6).
    Mutations caught (seen failing): the floor subtracted twice or not at all; each tower read
    on the other's curve; the limit ignored."""
    runs = _floored_runs()
    floor_table = aw.floors(runs, RANK_FLOOR, 2, 0.95)
    runs = aw.with_approximation(runs, floor_table)
    limits = floor_table.set_index("world")["read_limit"]
    levels = [0.2, 0.1, 0.005, 0.003]
    for world in ("lcgm", "lcgm_d64"):
        for tower in ("f", "g"):
            rows = pd.DataFrame(aw.eps_rows(runs, world, tower, levels, limits[world]))
            rows = rows.set_index("eps")
            for eps in (0.2, 0.1):
                r = rows.loc[eps]
                assert r["status"] == wn.REACHED, (world, tower, eps)
                assert r["width"] == pytest.approx((C[tower] / eps) ** (1 / A), rel=1e-9)
                assert r["seed_lo"] <= r["width"] <= r["seed_hi"]
            for eps in (0.005, 0.003):
                assert rows.loc[eps, "status"] == wn.BELOW
                assert math.isnan(rows.loc[eps, "width"])
    mix = pd.DataFrame(aw.eps_rows(runs, "gmm", "g", [1e-4, 3e-5, 1e-6], limits["gmm"]))
    mix = mix.set_index("eps")
    for eps in (1e-4, 3e-5):
        assert mix.loc[eps, "width"] == pytest.approx((GMM_C / eps) ** (1 / GMM_A), rel=1e-9)
    assert mix.loc[1e-6, "status"] == wn.BELOW
    # the cell table: the approximation part's seed mean, the widest cell's 0
    table = aw.cell_table(runs, 128).set_index(["world", "tower", "width", "budget"])
    assert table.loc[("lcgm", "g", 8, "1x"), "approx_mean"] == pytest.approx(0.8 * 8**-A, rel=1e-9)
    assert table.loc[("lcgm", "both", 128, "1x"), "approx_mean"] == pytest.approx(0, abs=1e-15)
    assert table.loc[("gmm", "f", 128, "1x"), "reused"]
    assert not table.loc[("lcgm", "f", 128, "1x"), "reused"]


def test_a_level_under_the_limit_is_not_read_and_the_others_are_unchanged():
    """Per-seed curves c_s·w^(−1/2) (c_s = 0.4, 0.5, 0.6; widths 1 … 64): with a limit of 0.08 the
    levels 0.2, 0.1 and 0.08 (at the limit) are read as without one, at (c̄/ε)² for the seed mean
    and (c_s/ε)² per seed; 0.05 (not reached without a limit) is "below the floor", no width,
    no seed reaching it. Mutations caught (seen failing): the limit compared with <= (0.08 not
    read); the limit ignored."""
    widths = [1, 2, 4, 8, 16, 32, 64]
    cs = [0.4, 0.5, 0.6]
    per_seed = [[c * w**-0.5 for c in cs] for w in widths]
    levels = [0.2, 0.1, 0.08, 0.05]
    rows = wn.ladder(widths, per_seed, levels, 0.08)
    plain = wn.ladder(widths, per_seed, levels)
    for r, p, eps in zip(rows[:3], plain[:3], levels[:3], strict=True):
        assert r == p
        assert r["status"] == wn.REACHED and r["seeds_reaching"] == 3
        assert r["width"] == pytest.approx((0.5 / eps) ** 2, rel=1e-9)
        assert r["seed_widths"] == pytest.approx([(c / eps) ** 2 for c in cs], rel=1e-9)
    assert plain[3]["status"] == wn.NOT_REACHED
    below = rows[3]
    assert below["status"] == wn.BELOW and math.isnan(below["width"])
    assert below["seed_status"] == [wn.BELOW] * 3 and below["seeds_reaching"] == 0
    assert all(math.isnan(w) for w in below["seed_widths"])


# --- W4: the tower asymmetry on the approximation part --------------------------------------------
WIDE = [2.0**k for k in range(11)]  # 1 … 1024
CS = [0.4, 0.5, 0.6]


def _eps_rows(world, tower, levels, need, a=1.0, widths=WIDE) -> list[dict]:
    """eps rows of per-seed curves c_s·(w/k_s)^(−a): seed s needs k_s·(c_s/ε)^(1/a)."""
    per_seed = [[c * (w / k) ** -a for c, k in zip(CS, need, strict=True)] for w in widths]
    return [{"world": world, "tower": tower} | r for r in wn.ladder(widths, per_seed, levels)]


def _fits_of(*worlds, converged=True) -> pd.DataFrame:
    return pd.DataFrame(
        [{"world": w, "tower": t, "converged": converged} for w in worlds for t in ("f", "g")]
    )


def _w4(ratios, levels=(0.1, 0.03, 0.01), converged=True, widths=WIDE, **g):
    eps = pd.DataFrame(
        _eps_rows("lcgm", "f", levels, [1, 1, 1], widths=widths)
        + _eps_rows("lcgm", "g", levels, ratios, widths=widths, **g)
    )
    return av.w4(eps, _fits_of("lcgm", converged=converged), 0.95)


def _t_ratio(ratios):
    """The geometric mean of per-seed ratios and its Student-t interval, by hand."""
    logs = np.log(ratios)
    half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    return [math.exp(logs.mean() + d) for d in (0, -half, half)]


def test_w4_holds_when_g_needs_twice_f_s_width_and_fails_at_half():
    """Seed s's g needs k_s times f's width at every level (k = 1.8, 2, 2.2): W4's value is their
    geometric mean, its interval the Student-t interval of log k_s, and it holds; at k = 0.45,
    0.5, 0.55 it fails; at 0.5, 1, 2 (log ratios −log 2, 0, log 2) it is unresolved; on cells
    that did not converge a decided verdict is "not converged". Mutations caught (seen failing):
    w_f / w_g for w_g / w_f; the gate dropped."""
    row = _w4([1.8, 2.0, 2.2])
    assert row["verdict"] == "holds"
    assert [row["value"], row["lo"], row["hi"]] == pytest.approx(_t_ratio([1.8, 2.0, 2.2]))
    assert row["value"] == pytest.approx(math.exp(np.mean(np.log([1.8, 2.0, 2.2]))))
    assert row["measured"].endswith("(geometric mean over ε = 0.1, 0.03, 0.01, 3 seeds)")
    row = _w4([0.45, 0.5, 0.55])
    assert row["verdict"] == "fails"
    assert [row["value"], row["lo"], row["hi"]] == pytest.approx(_t_ratio([0.45, 0.5, 0.55]))
    assert _w4([0.5, 1.0, 2.0])["verdict"] == "unresolved"
    assert _w4([1.8, 2.0, 2.2], converged=False)["verdict"] == "unresolved: not converged"


def test_w4_reads_only_the_levels_every_seed_of_both_towers_reads():
    """f needs c_s/ε, g needs 2·(c_s/ε)² (its curve c_s·(w/2)^(−1/2)) on widths 2 … 1024: at
    ε = 0.3 f needs 1.3 … 2, every seed "at the smallest width"; at 0.01 g needs 3200 … 7200 (not
    reached); only 0.1 is read by both, where g/f = 20·c_s = 8, 10, 12. Mutation caught
    (seen failing): reading a level a tower reaches only at the smallest width."""
    row = _w4([2.0, 2.0, 2.0], levels=(0.3, 0.1, 0.01), widths=WIDE[1:], a=0.5)
    assert row["measured"].endswith("(geometric mean over ε = 0.1, 3 seeds)")
    assert [row["value"], row["lo"], row["hi"]] == pytest.approx(_t_ratio([8.0, 10.0, 12.0]))
    assert row["verdict"] == "holds"
    none = _w4([2.0, 2.0, 2.0], levels=(0.3, 0.01), widths=WIDE[1:], a=0.5)
    assert none["verdict"] == "unresolved"
    assert none["measured"] == "no ε both towers read by interpolation"


# --- W5, W6: the dimension sweep ------------------------------------------------------------------
def _dims(f_ratio, g_ratio, design=None, levels=(0.1, 0.03)):
    design = design or DESIGN | {"lcgm_d64": {"d1": 64, "d2": 64}}
    eps = pd.DataFrame(
        _eps_rows("lcgm", "f", levels, [1, 1, 1])
        + _eps_rows("lcgm", "g", levels, [1, 1, 1])
        + _eps_rows("lcgm_d64", "f", levels, [f_ratio] * 3)
        + _eps_rows("lcgm_d64", "g", levels, [g_ratio] * 3)
    )
    rows = av.dim_rows(eps, _fits_of("lcgm", "lcgm_d64"), design, list(levels), 0.95)
    return rows, av.w5_w6(rows)


def test_w5_holds_and_w6_fails_when_only_g_grows_with_the_dimension():
    """From d₀ = 16 to d = 64 (c = log 64 / log 16 = 1.5): f needs the same width (ratio 1), g
    ten times it (ratio 10) at both levels: f's part "below c", g's "above c": W5 holds, W6
    fails. With g's ratio 1 too W5 fails (its g part) and W6 holds. Mutations caught (seen failing):
    f's and g's dimensions swapped, W6's direction, the log of c left out."""
    rows, (w5, w6) = _dims(1.0, 10.0)
    by = {r["tower"]: r for r in rows}
    assert (by["f"]["d0"], by["f"]["d"]) == (16, 64)
    assert by["f"]["factor_c"] == pytest.approx(1.5, rel=1e-12)
    assert by["f"]["levels"] == "0.1 0.03"
    assert by["f"]["ratio"] == pytest.approx(1.0, rel=1e-9)
    assert by["g"]["ratio"] == pytest.approx(10.0, rel=1e-9)
    assert (by["f"]["reading"], by["g"]["reading"]) == ("below c", "above c")
    assert (w5["verdict"], w6["verdict"]) == ("holds", "fails")
    assert w5["value"] == pytest.approx(10.0, rel=1e-9)
    rows, (w5, w6) = _dims(1.0, 1.0)
    assert (w5["verdict"], w6["verdict"]) == ("fails", "holds")
    rows, (w5, w6) = _dims(10.0, 10.0)  # f grows beyond c: W5's f part fails
    assert w5["verdict"] == "fails"


def test_each_tower_is_compared_with_its_own_input_dimension():
    """With d_x = 16 and d_y = 32 at d₀, the factor is log 64 / log 16 = 1.5 for f (it reads x)
    and log 64 / log 32 = 1.2 for g (it reads y): a ratio 1.35 lies below f's c and above g's, so
    W5 holds and W6 fails. Mutation caught (seen failing): f and g given each other's d₀."""
    design = DESIGN | {"lcgm": {"d1": 16, "d2": 32}, "lcgm_d64": {"d1": 64, "d2": 64}}
    rows, (w5, w6) = _dims(1.35, 1.35, design)
    by = {r["tower"]: r for r in rows}
    assert by["f"]["factor_c"] == pytest.approx(1.5) and by["g"]["factor_c"] == pytest.approx(1.2)
    assert (by["f"]["reading"], by["g"]["reading"]) == ("below c", "above c")
    assert (w5["verdict"], w6["verdict"]) == ("holds", "fails")


# --- W7: the mixture reaches its exact floor by width 8 -------------------------------------------
def _gmm_runs(share_at_8, share_below=0.5, floor=4.6e-4, converged=True):
    """The mixture's runs with their approximation part: share × floor at widths >= 8 (1 % seed
    spread), ``share_below`` × floor at width 4."""
    rows = []
    for s in (0, 1, 2):
        for tower in ("f", "g"):
            for w, share in ((4, share_below), (8, share_at_8), (128, share_at_8)):
                approx = share * floor * (1 + 0.01 * (s - 1))
                rows.append(
                    {"world": "gmm", "tower": tower, "width": w, "seed": s}
                    | {"floor": floor, "approx": approx, "excess": floor + approx}
                )
    runs = pd.DataFrame(rows)
    cells = runs.drop_duplicates(["tower", "width"])[["world", "tower", "width"]]
    return runs, cells.assign(converged=converged)


def test_w7_holds_at_five_percent_of_the_floor_and_fails_at_fifty():
    """The approximation part at 5 % of the exact floor at every width >= 8, with a 1 % seed
    spread (the Student-t upper end 0.05·(1 + 0.01·t(0.975, 2)/√3) ≈ 5.1 % of the floor, under
    the 10 % tolerance) holds, whatever width 4 does (50 %); at 50 % (the lower end ≈ 49 %) it
    fails; unconverged cells make it "not converged". Known value: the worst share, 0.05 or 0.5.
    Mutations caught (seen failing): widths under 8 judged; the excess judged instead of the
    approximation part; the gate dropped."""
    row = av.w7(*_gmm_runs(0.05), 0.95)
    assert row["verdict"] == "holds"
    assert row["value"] == pytest.approx(0.05, rel=1e-9)
    row = av.w7(*_gmm_runs(0.5), 0.95)
    assert row["verdict"] == "fails"
    assert row["value"] == pytest.approx(0.5, rel=1e-9)
    assert av.w7(*_gmm_runs(0.05, converged=False), 0.95)["verdict"] == (
        "unresolved: not converged"
    )


def test_w7_reports_the_cell_furthest_above_the_floor_and_why_it_is_open():
    """f at 3 % of the floor, g at 11 % with a wide seed spread (shares 6, 11, 16 %: Student-t
    interval 11 ± 4.303·5/√3 = [-1.4 %, 23.4 %], across the 10 % bar): W7 is unresolved, its value
    and interval are g's (the worst cell, known by hand), and the measured text names the cells
    whose interval straddles the bar. Mutation caught (seen failing on the code before this
    test): the worst cell picked by comparing an absolute part with a ratio kept the first cell's
    (f's 3 %)."""
    runs, cells = _gmm_runs(0.03)
    share = {0: 0.06, 1: 0.11, 2: 0.16}
    g8 = (runs["tower"] == "g") & (runs["width"] >= 8)
    runs.loc[g8, "approx"] = [share[s] * 4.6e-4 for s in runs.loc[g8, "seed"]]
    row = av.w7(runs, cells, 0.95)
    assert row["verdict"] == "unresolved"
    assert row["value"] == pytest.approx(0.11, rel=1e-9)
    half = 4.302652729911275 * 0.05 / np.sqrt(3)
    assert (row["lo"], row["hi"]) == pytest.approx((0.11 - half, 0.11 + half), rel=1e-6)
    assert "(g 8 [" in row["measured"] and "f 8 [" not in row["measured"]
    assert row["measured"].endswith("] straddle 10%)")  # two cells open: g 8 and g 128
    # the shares grouped by tower: f's then g's, each width once with its share
    assert row["measured"].startswith("approximation part / floor: f 8: 3.0%")
    assert "; g 8: 11.0%" in row["measured"]


@pytest.mark.parametrize("zero", [4.3e-19, 0.0, -4.3e-19])
def test_the_floors_own_cell_reads_the_same_whatever_the_rounding_of_its_zero(zero):
    """On the LCGM the last grid width is the floor's own cell, its approximation part 0 up to
    rounding: a level crossed on that segment is read linearly in e there (log in w), so ±4e-19
    and 0 read the same width, exp(log 16 + ½·log 8) for a level halfway from 0.02 to 0. Without
    linear_last the positive rounding read log-log and gave a width just above 16."""
    widths, curve = [2, 4, 8, 16, 128], [0.3, 0.1, 0.04, 0.02, zero]
    w, status = wn.width_to_reach(widths, curve, 0.01, linear_last=True)
    assert status == wn.REACHED
    assert w == pytest.approx(math.exp(math.log(16) + 0.5 * math.log(8)), rel=1e-12)
    # an exact floor (the mixture's) keeps log-log on a positive last value
    w_log, _ = wn.width_to_reach(widths, [0.3, 0.1, 0.04, 0.02, 0.005], 0.01)
    assert w_log == pytest.approx(16 * 8**0.5, rel=1e-12)


def test_w3_s_text_puts_the_saturation_range_first_beside_the_verdict_it_decides():
    """A range [1, 8] inside W3's widths ≤ 32 decides "holds" even where the rule leaves its point
    unresolved: the text reads "1–8 (point unresolved)", not "unresolved (1–8)", which read as a
    non-answer beside "holds"; a saturated tower keeps the rule's label. Mutation caught (seen
    failing): the rule's label kept for an unresolved point."""
    fits = pd.DataFrame(
        [
            {"tower": "f", "saturation": "unresolved (1–8)", "saturation_status": "unresolved"}
            | {"saturation_lo": 1, "saturation_hi": 8, "converged": True},
            {"tower": "g", "saturation": "4", "saturation_status": "saturated"}
            | {"saturation_lo": 4, "saturation_hi": 4, "converged": True},
        ]
    )
    row = av.w3(fits)
    assert row["verdict"] == "holds"
    assert row["measured"] == "saturation width f: 1–8 (point unresolved), g: 4"


def test_an_open_ended_saturation_range_reads_at_least_its_lower_end():
    """An unresolved saturation whose range has no upper end (the trend case) reads "≥ 8 (point
    unresolved)", never "8–inf". Mutation caught (seen failing): the finite format kept."""
    fits = pd.DataFrame(
        [
            {"tower": "f", "saturation": "unresolved (≥ 8)", "saturation_status": "unresolved"}
            | {"saturation_lo": 8, "saturation_hi": math.inf, "converged": True}
        ]
    )
    assert av._saturation_text(fits) == "saturation width f: ≥ 8 (point unresolved)"
