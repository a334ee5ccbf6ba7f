"""Two-tower training: determinism, divergence guard, population metrics, speed-critical pieces."""

import json
import math

import numpy as np
import pytest
import torch

from crl_approx.data import gmm_pairs
from crl_approx.encoders import (
    Grid,
    TrainingDiverged,
    TwoTower,
    population_metrics,
    select_device,
    train_gmm,
    write_outputs,
)
from crl_approx.gmm import GaussianMixture
from crl_approx.spectrum import infonce_loss, operator_spectrum, spectrum_table

GMM = {
    "mu_x": 1.2,
    "sigma_x": 1.0,
    "mu_y": 1.2,
    "sigma_y": 1.0,
    "prior": 0.5,
    "quadrature_nodes": 40,
    "n_train": 2048,
    "n_val": 512,
}
TRAIN = {
    "width": 16,
    "depth": 3,
    "lr": 3e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "epochs": 3,
    "batch_size": 256,
    "population_nodes": 12,
    "population_steps": 60,
    "max_loss": 100.0,
}
TAU = 0.5
VOLATILE = {"train_seconds"}  # wall-clock fields; everything else must be bitwise identical


def _strip(metrics):
    out = {k: v for k, v in metrics.items() if k not in VOLATILE}
    out["history"] = [{k: v for k, v in h.items() if k != "seconds"} for h in out["history"]]
    return json.dumps(out, sort_keys=True)


@pytest.fixture(scope="module")
def pairs():
    return gmm_pairs(GMM, 0)


@pytest.mark.parametrize("objective", ["samples", "population"])
def test_same_seed_gives_bitwise_identical_metrics(pairs, objective):
    a = train_gmm(GMM, TRAIN, TAU, 2, 0, objective, 1, pairs)
    b = train_gmm(GMM, TRAIN, TAU, 2, 0, objective, 1, pairs)
    assert _strip(a[1]) == _strip(b[1])
    for key in a[2]:
        np.testing.assert_array_equal(a[2][key], b[2][key])
    c = train_gmm(GMM, TRAIN, TAU, 2, 1, objective, 1, pairs)
    assert a[1]["mlp_excess_risk"] != c[1]["mlp_excess_risk"]


def test_metrics_hold_history_checkpoints_and_finite_numbers(pairs):
    _, metrics, ckpt = train_gmm(GMM, TRAIN, TAU, 2, 0, "samples", 1, pairs)
    assert [h["epoch"] for h in metrics["history"]] == [1, 2, 3]
    assert ckpt["f"].shape == (3, 80, 2) and ckpt["g"].shape == (3, 80, 2)
    for key in ("mlp_excess_risk", "mlp_l2_distance", "l2_best_cx_squared", "final_val_loss"):
        assert math.isfinite(metrics[key]), key
    for key in ("mlp_excess_risk", "mlp_l2_distance", "l2_best_cx_squared", "l2_raw_squared"):
        assert metrics[key] > 0, key
    assert metrics["mlp_excess_risk"] > 0
    assert metrics["steps"] == 3 * (2048 // 256)
    json.dumps(metrics, allow_nan=False)


def test_population_training_reduces_the_excess():
    train = dict(TRAIN, population_steps=300, epochs=3)
    _, metrics, _ = train_gmm(GMM, train, TAU, 2, 0, "population", 1)
    hist = [h["excess_risk"] for h in metrics["history"]]
    assert hist[-1] < hist[0]
    # validation loss of the population objective is the loss on the evaluation grid
    assert metrics["final_val_loss"] == pytest.approx(
        metrics["mlp_excess_risk"] + metrics["L_star"]
    )


def test_nan_data_stops_training_with_an_error(pairs):
    bad = dict(pairs)
    bad["x_train"] = bad["x_train"].copy()
    bad["x_train"][::7] = np.nan
    with pytest.raises(TrainingDiverged, match="not finite"):
        train_gmm(GMM, TRAIN, TAU, 2, 0, "samples", 1, bad)


def test_exploding_loss_stops_training(pairs):
    with pytest.raises(TrainingDiverged, match=r"train\.max_loss"):
        train_gmm(GMM, dict(TRAIN, max_loss=0.01), TAU, 2, 0, "samples", 1, pairs)


def test_population_metrics_of_known_scores():
    spec = operator_spectrum(GaussianMixture(1.2, 1.0, 1.2, 1.0), 60)
    l_star = infonce_loss(spec, TAU * spec.pmi, TAU)
    exact = population_metrics(spec, TAU * spec.pmi, TAU, l_star)
    assert exact["mlp_excess_risk"] == pytest.approx(0, abs=1e-14)
    assert exact["mlp_l2_distance"] == pytest.approx(0, abs=1e-20)
    # an additive c(x) is invisible to the loss and to the self-normalised distance
    shifted = TAU * spec.pmi + np.cos(spec.quad.x)[:, None]
    m = population_metrics(spec, shifted, TAU, l_star)
    assert m["mlp_excess_risk"] == pytest.approx(0, abs=1e-13)
    assert m["mlp_l2_distance"] == pytest.approx(0, abs=1e-20)
    assert m["l2_best_cx_squared"] == pytest.approx(0, abs=1e-20)
    assert m["l2_raw_squared"] > 0.1
    # the rank-2 truncation reproduces the spectrum table's numbers
    row = spectrum_table(spec, [2], TAU).iloc[0]
    t = population_metrics(spec, TAU * spec.truncated_pmi(2), TAU, l_star)
    assert t["mlp_excess_risk"] == pytest.approx(row["truncation_excess_risk"], rel=1e-10)
    assert t["mlp_l2_distance"] == pytest.approx(row["truncation_l2_selfnorm"], rel=1e-10)


def test_torch_grid_loss_equals_the_reference_loss():
    mix = GaussianMixture(0.7, 0.8, 2.0, 1.5, 0.3)
    spec = operator_spectrum(mix, 30)
    grid = Grid.from_mixture(mix, 30, torch.float64, torch.device("cpu"))
    score = np.random.default_rng(0).standard_normal(spec.pmi.shape)
    ref = infonce_loss(spec, score, TAU)
    assert float(grid.loss(torch.from_numpy(score), TAU)) == pytest.approx(ref, rel=1e-12)


def test_architecture_matches_the_paper():
    model = TwoTower(1, 1, dim=8, width=128, depth=3)
    linears = [m for m in model.f if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(1, 128), (128, 128), (128, 8)]
    assert sum(isinstance(m, torch.nn.ReLU) for m in model.g) == 2
    s = model(torch.zeros(5, 1), torch.zeros(7, 1))
    assert s.shape == (5, 7)


def test_device_falls_back_to_cpu_with_a_log_line(caplog):
    caplog.set_level("INFO")
    dev = select_device()
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert "device:" in caplog.text


def test_outputs_are_all_or_nothing(tmp_path, pairs):
    class Out:
        model = tmp_path / "model.pt"
        checkpoints = tmp_path / "checkpoints.npz"
        metrics = tmp_path / "metrics.json"

    model = TwoTower(1, 1, 2, 8, 3)
    with pytest.raises(ValueError):
        # NaN in the metrics is refused before metrics.json appears
        write_outputs(model, {"x": float("nan")}, {"a": np.zeros(2)}, Out, {})
    assert not Out.metrics.exists() and not Out.model.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_cosine_score_lives_on_the_sphere():
    torch.manual_seed(0)
    model = TwoTower(1, 1, 3, 16, 3, score="cosine", cosine_scale=2.5, learn_scale=False)
    x = torch.linspace(-3, 3, 50)[:, None]
    fx, gy = model.embed_x(x), model.embed_y(x)
    torch.testing.assert_close(fx.norm(dim=1), torch.full((50,), 2.5**0.5))
    s = model(x, x)
    assert s.abs().max() <= 2.5 + 1e-6
    torch.testing.assert_close(s, fx @ gy.T)
    assert "log_scale" not in dict(model.named_parameters())  # fixed: a buffer
    learn = TwoTower(1, 1, 3, 16, 3, score="cosine", cosine_scale=2.5)
    assert "log_scale" in dict(learn.named_parameters())
    # on the 0-sphere (D = 1) a cosine score takes the two values ±c
    one = TwoTower(1, 1, 1, 16, 3, score="cosine", cosine_scale=1.5, learn_scale=False)
    values = torch.unique(one(x, x).detach().round(decimals=5))
    assert set(values.tolist()) <= {-1.5, 1.5}
    with pytest.raises(ValueError, match="unknown score"):
        TwoTower(1, 1, 2, 8, 3, score="euclid")


def test_cosine_training_learns_the_scale_and_reports_it():
    train = dict(TRAIN, score="cosine", cosine_scale=1.0, cosine_scale_learnable=True)
    _, metrics, ckpt = train_gmm(GMM, train, TAU, 2, 0, "population", 1)
    assert metrics["score"] == "cosine"
    assert metrics["cosine_scale"] != 1.0 and metrics["cosine_scale"] > 0
    # checkpoints hold the effective factors: their norms are √c, so f gᵀ is the cosine score
    norms = np.linalg.norm(ckpt["f"][-1], axis=1)
    np.testing.assert_allclose(norms, math.sqrt(metrics["cosine_scale"]), rtol=1e-5)
    inner = train_gmm(GMM, TRAIN, TAU, 2, 0, "population", 1)[1]
    assert inner["score"] == "inner" and inner["cosine_scale"] is None
