"""The paper's values only where the run's setting is the paper's: a changed mixture, K or τ
leaves the affected paper columns empty (with the keys that differ) and gives no verdict there,
while the checks that need no paper value remain."""

import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from crl_approx.analyses.probes import probe_table
from crl_approx.analyses.tables import table1
from crl_approx.config import load_paper_values
from crl_approx.models.gmm import GaussianMixture
from crl_approx.numerics.spectrum import operator_spectrum, spectrum_table
from crl_approx.render.html import table1_rows
from crl_approx.render.summary import summary

PAPER = REPO / "workflow" / "resources" / "paper_values.yaml"
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _config(**changes):
    out = copy.deepcopy(CONFIG)
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            out[section][name] = value
        else:
            out[section] = value
    return out


def test_the_default_config_is_the_papers_setting():
    paper = load_paper_values(PAPER, CONFIG)
    assert paper["differs"] == {}
    assert paper["table1"] == load_paper_values(PAPER)["table1"]


@pytest.mark.parametrize(
    ("changes", "differs", "kept"),
    [
        (
            {"gmm__mu_y": 1.5},
            {"table1_spectral_tail", "table1_truncation", "table1_mlp", "noise"},
            {"lcgm"},
        ),
        ({"tau": 0.25}, {"table1_truncation", "table1_mlp", "lcgm"}, {"noise"}),
        ({"lcgm__K": 6}, {"lcgm"}, {"noise"}),
        ({"train__epochs": 40}, {"table1_mlp"}, {"noise", "lcgm"}),
    ],
)
def test_a_changed_setting_blanks_exactly_its_values(changes, differs, kept):
    paper = load_paper_values(PAPER, _config(**changes))
    assert set(paper["differs"]) == differs
    key = next(iter(changes)).replace("__", ".")
    assert all(keys == [key] for keys in paper["differs"].values())
    rows = paper["table1"]
    assert all((r["mlp_excess_risk"] is None) == ("table1_mlp" in differs) for r in rows)
    assert all((r["spectral_tail"] is None) == ("table1_spectral_tail" in differs) for r in rows)
    assert (paper["lcgm"]["probe_r2_f"] is None) == ("lcgm" in differs)
    assert (paper["noise"]["mu_hat"] is None) == ("noise" in differs)
    assert "noise" not in kept or paper["noise"]["mu_hat"] == 0.878890


def _table1_at(tau: float):
    spec = spectrum_table(
        operator_spectrum(GaussianMixture(1.2, 1.0, 1.2, 1.0), 80), [1, 2, 4, 8], tau
    )
    floor = spec[["D"]].assign(rank_d_floor_excess_risk=spec["truncation_excess_risk"])
    runs = spec[["D"]].assign(
        objective="population",
        seed=0,
        mlp_excess_risk=spec["truncation_excess_risk"],
        mlp_l2_distance=spec["l2_truncation_error"],
    )
    paper = load_paper_values(PAPER, _config(tau=tau))
    return table1(spec, floor, runs, paper, ["population"], "population"), spec, paper


def test_a_changed_tau_gives_no_verdict_on_the_columns_that_depend_on_it():
    t1, spec, paper = _table1_at(0.25)
    assert t1["paper_spectral_tail"].notna().all()  # the tail does not depend on τ
    assert t1["paper_truncation_excess_risk"].isna().all()
    assert t1["ratio_mlp_excess_risk"].isna().all()
    assert "tau" in t1["paper_note"].iloc[0]
    rows = table1_rows(t1)
    assert all(r["trunc"]["verdict"] == "—" for r in rows)
    assert all(r["trunc"]["paper"] == "not the paper's setting" for r in rows)
    assert all(r["tail"]["verdict"] == "matches printed digits" for r in rows)
    noise = pd.DataFrame(
        [
            {
                "dataset": "gmm",
                "seed": -1,
                "mu_hat": 0.5,
                "mu_ci_lo": 0.4,
                "mu_ci_hi": 0.6,
                "rate_exponent": 0.6,
                "rate_exponent_ci_lo": 0.58,
                "rate_exponent_ci_hi": 0.62,
            }
        ]
    )
    lcgm = {"comparison": [], "paper_K": 8, "K": 6, "elbow": 6}
    s = summary(rows, ["population"], spec, lcgm, noise, paper)
    assert s["not_paper_setting"]["table1_truncation"] == ["tau"]
    verdicts = {line["item"]: line["verdict"] for line in s["lines"]}
    t1_lines = {k: v for k, v in verdicts.items() if k.startswith("Table 1") and "tail" not in k}
    assert len(t1_lines) == 12 and set(t1_lines.values()) == {"—"}
    # the checks that need no paper value are still made: the relation and the run's own K
    lcgm_item = (
        "LCGM: the alignment quality (mean of the two probe R²) saturates at D = K "
        "(the saturation rule reads it against K − 1 or K)"
    )
    assert verdicts[lcgm_item] == "holds"
    relation = "truncation excess ≲ spectral tail (every D of Table 1, Gaussian mixture)"
    assert verdicts[relation] == "holds"


def test_a_changed_k_leaves_the_probe_tables_paper_columns_empty():
    runs = pd.DataFrame(
        {"D": [6, 6], "seed": [0, 1], "probe_r2_f": [0.9, 0.91], "probe_r2_g": [0.8, 0.82]}
    )
    for col in ("alignment_quality", "cc_capture_f", "cc_capture_g", "heldout_excess"):
        runs[col] = 0.5
    runs["final_val_loss"] = runs["train_seconds"] = 1.0
    at_paper = probe_table(runs, load_paper_values(PAPER, CONFIG)["lcgm"] | {"K": 6}, 6)
    assert at_paper["paper_probe_r2_f"].iloc[0] == 0.97  # the same table with the values kept
    changed = load_paper_values(PAPER, _config(lcgm__K=6))["lcgm"] | {"K": 6}
    assert np.isnan(probe_table(runs, changed, 6)["paper_probe_r2_f"]).all()
