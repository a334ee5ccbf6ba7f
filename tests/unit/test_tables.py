"""Table 1 assembly: means, standard deviations, the paper's values and ratios."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crl_approx.analyses.tables import table1
from crl_approx.config import load_paper_values

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def paper():
    return load_paper_values(REPO / "workflow" / "resources" / "paper_values.yaml")


def synthetic_runs():
    rows = []
    for objective, scale in (("samples", 1.0), ("population", 0.5)):
        for d in (1, 2):
            for seed, jitter in zip((0, 1, 2), (0.9, 1.0, 1.1), strict=True):
                rows.append(
                    {
                        "objective": objective,
                        "D": d,
                        "seed": seed,
                        "mlp_excess_risk": scale * jitter * 1e-2 / d,
                        "mlp_l2_distance": scale * jitter * 0.4 / d,
                    }
                )
    return pd.DataFrame(rows)


def test_table1_columns_statistics_and_ratios(paper):
    spectrum = pd.DataFrame(
        {"D": [1, 2], "spectral_tail": [0.49, 0.014], "truncation_excess_risk": [0.038, 1e-3]}
    )
    floor = pd.DataFrame({"D": [1, 2], "rank_d_floor_excess_risk": [9.9e-3, 4.6e-4]})
    t = table1(spectrum, floor, synthetic_runs(), paper, ["samples", "population"], "samples")
    assert list(zip(t["objective"], t["D"], strict=True)) == [
        ("samples", 1),
        ("samples", 2),
        ("population", 1),
        ("population", 2),
    ]
    assert t["is_default"].tolist() == [True, True, False, False]
    t = t.set_index(["objective", "D"])
    assert t.loc[("samples", 1), "mlp_excess_risk_mean"] == pytest.approx(1e-2)
    assert t.loc[("samples", 1), "mlp_excess_risk_sd"] == pytest.approx(
        np.std([0.9e-2, 1e-2, 1.1e-2], ddof=1)
    )
    assert t.loc[("population", 2), "mlp_l2_distance_mean"] == pytest.approx(0.1)
    assert t.loc[("samples", 1), "n_seeds"] == 3 and t.loc[("population", 1), "n_seeds"] == 3
    assert t.loc[("population", 1), "paper_mlp_excess_risk"] == 9.941e-3
    assert t.loc[("samples", 2), "paper_spectral_tail"] == 1.397e-2
    assert t.loc[("samples", 1), "ratio_mlp_excess_risk"] == pytest.approx(1e-2 / 9.941e-3)
    assert t.loc[("population", 1), "ratio_mlp_excess_risk"] == pytest.approx(0.5e-2 / 9.941e-3)
    assert t.loc[("samples", 2), "mlp_excess_over_floor"] == pytest.approx(0.5e-2 / 4.6e-4)
    # the spectral columns do not depend on the objective
    assert t.loc[("population", 2), "spectral_tail"] == t.loc[("samples", 2), "spectral_tail"]


def test_the_default_objective_leads_and_is_marked(paper):
    spectrum = pd.DataFrame({"D": [1], "spectral_tail": [0.49], "truncation_excess_risk": [0.038]})
    floor = pd.DataFrame({"D": [1], "rank_d_floor_excess_risk": [9.9e-3]})
    t = table1(spectrum, floor, synthetic_runs(), paper, ["samples", "population"], "population")
    assert t["objective"].tolist() == ["population", "samples"]
    assert t["is_default"].tolist() == [True, False]
    assert t.loc[0, "mlp_excess_risk_mean"] == pytest.approx(0.5e-2)
    assert t.loc[1, "mlp_excess_risk_mean"] == pytest.approx(1e-2)


def test_paper_values_file_holds_the_whole_table(paper):
    rows = {r["D"]: r for r in paper["table1"]}
    assert sorted(rows) == [1, 2, 4, 8]
    assert rows[8]["mlp_excess_risk"] == 9.188e-6
    assert paper["noise"]["mu_hat"] == 0.878890
