"""Experiment R end to end: its rules alone on small configs in a temporary directory — the
smoke configuration's tables and figure, and the experiment's falsifiable core, the elbow moving
with K."""

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, run_snakemake

pytestmark = pytest.mark.e2e
TARGETS = ("results/tables/digits_sweep.csv", "results/figures/digits.svg")


def run_digits(workdir, config_file):
    proc = run_snakemake(workdir, "--cores", "2", "--configfile", str(config_file), "--", *TARGETS)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return workdir / "results"


@pytest.fixture(scope="module")
def digits_smoke(tmp_path_factory):
    return run_digits(tmp_path_factory.mktemp("digits"), REPO / "config" / "smoke.yaml")


def test_smoke_tables_and_figure(digits_smoke):
    tables = digits_smoke / "tables"
    sweep = pd.read_csv(tables / "digits_sweep.csv")
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())["digits"]
    expected = {(f"K{len(g['groups'])}", d) for g in smoke["groupings"] for d in g["dims"]}
    expected |= {("halves", d) for d in smoke["halves_dims"]}
    assert set(zip(sweep["pairing"], sweep["D"], strict=True)) == expected
    for col in (
        "heldout_infonce_mean",
        "mi_bound_mean",
        "probe_accuracy_mean",
        "effective_rank_mean",
    ):
        assert np.isfinite(sweep[col]).all(), col
    classes = sweep[sweep["pairing"] != "halves"]
    assert np.isfinite(classes["heldout_excess_mean"]).all()
    assert (sweep["effective_rank_mean"] <= sweep["D"] + 1e-9).all()
    # the exact operator: rank K, so the tail and the truncation excess vanish at D = K
    ops = pd.read_csv(tables / "digits_class_operator.csv")
    at_k = ops[ops["D"] == ops["K"]]
    assert (at_k["spectral_tail"].abs() < 1e-12).all() and len(at_k) == 2
    verdicts = pd.read_csv(tables / "digits_verdicts.csv")
    assert len(verdicts) == 3
    assert set(verdicts["verdict"]) <= {"holds", "fails", "unresolved", "unresolved: not converged"}
    assert set(verdicts["verdict_elbow_rule"]) <= {"holds", "fails"}
    t1 = pd.read_csv(tables / "digits_table1.csv")
    assert list(t1["D"]) == [9, 10] and t1["rank_d_floor"].abs().max() < 1e-9
    curves = pd.read_csv(tables / "digits_curves.csv")
    assert len(curves) == len(sweep) * smoke["checkpoints"]
    svg = (digits_smoke / "figures" / "digits.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "(d) held-out pairs" in svg


@pytest.mark.slow
@pytest.mark.xfail(
    strict=False,
    reason="reported miss, not tuned away: under the robust elbow rule (the smallest D from which "
    "the curve stays in its band), the one-seed K = 2 held-out excess is flat within noise and "
    "turns back at its last D, so it has no elbow (NaN); docs/experiment_r.md reports it",
)
def test_the_elbow_moves_with_k(tmp_path):
    """The falsifiable core: with the default protocol (one seed), the held-out excess of the
    K = 2 grouping saturates at a smaller D than that of the K = 10 grouping. It misses today
    (the K = 2 curve has no elbow); the test stays as the prediction, run on every CI."""
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["digits"]
    groups = {len(g["groups"]): g["groups"] for g in default["groupings"]}
    cfg = {
        "seeds": [0],
        "digits": {
            "groupings": [
                {"groups": groups[10], "dims": [2, 5, 9, 10, 12]},
                {"groups": groups[2], "dims": [1, 2, 3, 5]},
            ],
            "halves_dims": [2, 4],
            "halves_steps": 20,
        },
    }
    path = tmp_path / "elbow.yaml"
    path.write_text(yaml.safe_dump(cfg))
    results = run_digits(tmp_path / "work", path)
    elbow = pd.read_csv(results / "tables" / "digits_elbow.csv")
    excess = elbow[elbow["curve"] == "heldout_excess"].set_index("K")["elbow_D"]
    assert excess[2] < excess[10], excess.to_dict()
