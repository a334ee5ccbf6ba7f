"""The facts docs/dynamics.md's generated prose prints (crl_approx.render.dynamics.says and
lcgm_says), computed in the package so the template prints and does not compute: crafted tables
whose counts and selections are known by hand."""

import math

import pandas as pd

from crl_approx.render import dynamics


def mixture_table():
    # D = 1 has no order; the population D = 4 cell reaches the optimum's span (0.95 ≥ 0.90),
    # the samples D = 4 cell misses it (0.80); the optimum's own span is off ψ at D = 4 (0.834)
    return pd.DataFrame(
        {
            "objective": ["population", "population", "samples", "samples"],
            "D": [1, 4, 1, 4],
            "order_verdict": ["not applicable", "holds", "not applicable", "unresolved"],
            "rho_coefficient": [math.nan, 0.9, math.nan, math.nan],
            "n_seeds_strictly_ordered": [0, 2, 0, 1],
            "n_seeds": [3, 3, 3, 3],
            "learned_below_excess": [0, 1.0, 0, 2.0],
            "capture_steps": ["1", "1;2", "1", "1;3"],
            "alignment_verdict": ["holds", "fails", "holds", "unresolved"],
            "converged": [True, True, False, True],
            "budget_agrees": [True, math.nan, math.nan, False],
            "f_min_cos2": [0.99, 0.7, 0.98, 0.6],
            "g_min_cos2": [0.97, 0.8, 0.95, 0.5],
            "f_floor_min_cos2": [0.99, 0.95, 0.99, 0.80],
            "floor_f_min_cos2": [1.0, 0.834, 1.0, 0.834],
            "final_misscaled_share": [0.1, 0.2, 0.3, 0.4],
        }
    )


def test_the_mixture_facts_are_the_tables_counts_and_selections():
    s = dynamics.says(mixture_table(), {"alignment_tol": 0.1})
    assert (s["order_holds"], s["n_multi"], s["strict"], s["runs"]) == (1, 2, 3, 6)
    assert [c["D"] for c in s["order_cells"]] == [4, 4]
    assert s["below_excess"] == [1.0, 2.0] and s["capture_steps"] == ["1 · 2", "1 · 3"]
    assert s["alignment"]["holds"] == 2 and s["alignment"]["fails"] == 1
    assert s["alignment"]["unresolved"] == 1 and s["alignment"]["unresolved: not converged"] == 0
    assert (s["converged"], s["budget_agrees"], s["budget_checked"]) == (3, 1, 2)
    assert s["unresolved"] == {"objective": "samples", "D": 4, "min_cos2": 0.5}
    assert [(r["objective"], r["D"]) for r in s["reached"]] == [
        ("population", 1),
        ("population", 4),
        ("samples", 1),
    ]
    assert [(r["objective"], r["D"], r["value"]) for r in s["missed"]] == [("samples", 4, 0.80)]
    assert [r["D"] for r in s["floor_f"]] == [1, 4]  # the first objective's rows only
    assert s["off"] == [4] and s["misscaled"] == [0.1, 0.2, 0.3, 0.4]
    # a looser bar moves the samples D = 4 cell to reached and the optimum's span on
    s = dynamics.says(mixture_table(), {"alignment_tol": 0.2})
    assert s["missed"] == [] and s["off"] == [] and math.isclose(s["bar"], 0.8)


def test_the_mixture_facts_leave_out_what_the_table_does_not_hold():
    s = dynamics.says(
        mixture_table().drop(columns=["converged", "budget_agrees"]), {"alignment_tol": 0.1}
    )
    assert "converged" not in s and "budget_agrees" not in s


def test_the_lcgm_facts_split_the_ds_at_the_target_ranks():
    t = pd.DataFrame(
        {
            "D": [1, 4, 7, 8, 12],
            "f_target_rank": [7] * 5,  # K − 1 = 7: low is D < 7, high from D = K = 8
            "verdict": ["holds", "fails", "fails", "unresolved", "holds"],
            "f_judged_final": [0.9, 0.8, 0.7, 0.95, 0.96],
        }
    )
    s = dynamics.lcgm_says(t)
    assert (s["counts"]["holds"], s["counts"]["fails"], s["counts"]["unresolved"], s["n"]) == (
        2,
        2,
        1,
        5,
    )
    assert [r["D"] for r in s["low"]] == [1, 4] and [r["D"] for r in s["high"]] == [8, 12]


def test_the_digits_budget_evidence_is_each_cells_drop_over_its_excess(tmp_path):
    """README's digits block prints the middle-to-last validation drop as a share of the cell's
    held-out excess (0.002 / 0.02 = 10 %, 0.01 / 0.04 = 25 % > the 10 % tolerance) and whether
    the halves rise in every cell."""
    from crl_approx.numerics.tiers import CLOSE_TOLERANCE
    from crl_approx.render.digits import RunTables

    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame(
        {
            "pairing": ["K2", "K2", "halves", "halves"],
            "D": [1, 2, 2, 4],
            "second_half_rel_drop": [0.01, 0.02, -0.03, -0.01],
            "best_checkpoint_mean": [9.0, 10.0, 5.0, 6.0],
        }
        | {"val_loss_mid": [2.012, 2.05, 1.0, 1.0], "val_loss_last": [2.010, 2.04, 1.0, 1.0]}
    ).to_csv(tables / "digits_convergence.csv", index=False)
    pd.DataFrame(
        {"pairing": ["K2", "K2", "halves", "halves"], "D": [1, 2, 2, 4]}
        | {"heldout_excess_mean": [0.02, 0.04, math.nan, math.nan]}
    ).to_csv(tables / "digits_sweep.csv", index=False)
    b = RunTables(tmp_path / "results", job_times=None).budget()
    assert [round(x, 6) for x in b["share"]] == [0.1, 0.25]
    assert b["over"] == (0.25 > CLOSE_TOLERANCE)
    assert b["drop"] == [0.01, 0.02] and b["best"] == [9.0, 10.0]
    assert b["halves_rise"] == [0.03, 0.01] and b["overfits"] and b["halves_best"] == [5.0, 6.0]


def test_a_flop_cells_time_outside_its_loops_is_what_the_loops_leave():
    """README's FLOP-limit table: a 10 s job whose steps took 6 s and validation 1.5 s spent
    2.5 s outside its loops, its step loop 60 % of its CPU."""
    from crl_approx.render.runrecord import flop_cells

    cell = {"cell": "x", "job_cpu_s": 10.0, "phase_cpu_s": {"steps": 6.0, "validation": 1.5}}
    (c,) = flop_cells({"cells": [cell]})
    assert math.isclose(c["outside_s"], 2.5) and math.isclose(c["step_share"], 0.6)
    assert c["cell"] == "x" and "outside_s" not in cell  # the record is not changed
