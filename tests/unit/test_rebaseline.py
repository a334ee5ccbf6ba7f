"""benchmarks/rebaseline.py: the share of seeds' values that seed noise alone moves beyond 3 sample
sds (against an integral computed apart, and the many-seeds limit), a text cell that changed only
its numbers, and a per-seed table cell by cell on crafted tables."""

import math
import sys

import numpy as np
import pandas as pd
from scipy import integrate, stats

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import rebaseline


def test_the_share_seed_noise_moves_beyond_three_sds():
    # 3 seeds: with the old value inside its own sd, the share is the mean over an angle θ of
    # 1 − (1 + 2 / (3√3/2 + cos θ)²)^(−1/2) (a closed form for normal seeds)
    def f(t):
        return 1 - (1 + 2 / (3 * math.sqrt(3) / 2 + math.cos(t)) ** 2) ** -0.5

    exact = integrate.quad(f, 0, 2 * math.pi)[0] / (2 * math.pi)
    assert abs(rebaseline.exceed_by_noise(3) - exact) < 0.002
    # many seeds: the sd is σ, the move N(0, 2σ²)
    limit = 2 * stats.norm.sf(3 / math.sqrt(2))
    assert abs(rebaseline.exceed_by_noise(200, draws=200_000) - limit) < 0.002


def test_a_text_that_changed_only_its_numbers():
    assert (
        rebaseline.numbers_only({"ours": "above the paper (7.68×)", "reference": "(7.91×)"})
        is False
    )
    assert rebaseline.numbers_only({"ours": "above (7.68×)", "reference": "above (7.91×)"})
    assert not rebaseline.numbers_only({"ours": "holds", "reference": "unresolved"})
    assert not rebaseline.numbers_only({"ours": 4.0, "reference": float("nan")})


def test_a_per_seed_table_cell_by_cell():
    """Three cells of 3 seeds: one the change left alone, one moved by a tenth of its sd, one
    whose every seed moved 10 sds; a floor column constant over each cell's seeds."""
    seeds = [0, 1, 2]
    old = pd.DataFrame(
        {
            "world": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "tower": ["f"] * 9,
            "width": [2] * 9,
            "budget": ["1x"] * 9,
            "seed": seeds * 3,
            "excess": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
            "floor": [0.5] * 9,
        }
    )
    new = old.copy()
    new.loc[3:5, "excess"] += 0.1  # cell b: sd 1, mean moved 0.1
    new.loc[6:8, "excess"] += 10.0  # cell c: mean moved 10 sds
    new["floor"] = 0.51
    out = rebaseline.per_seed("widths_runs.csv", old.to_dict("list"), new)
    assert out["unchanged_cells"] == 1 and out["cells"] == 2 and out["values"] == 6
    assert out["beyond"] == 3  # cell c's seeds, each 10 > 3 × 1
    assert [m["cell"][0] for m in out["mean_misses"]] == ["c"]
    assert math.isclose(out["largest_mean_over_sd"], 10.0)
    assert set(out["constant_columns"]) == {"floor"}
    assert math.isclose(out["constant_columns"]["floor"], 0.01 / 0.51)
    assert out["seeds"] == 3 and 0.13 < out["expected_beyond_share"] < 0.15
    assert np.isfinite(out["expected_beyond_share"])
