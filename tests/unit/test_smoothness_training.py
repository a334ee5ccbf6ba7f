"""Experiment S's trainer: the population objective on a noise channel's Gauss–Legendre grids
(training.population, analyses.smoothness_cells): a cell trains and writes its outputs, a seed does
not depend on the seeds beside it, training lowers the exact excess, and on the mixture the generic
trainer is train_gmm's population branch bitwise."""

import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from crl_approx.analyses import smoothness_cells
from crl_approx.integrity import load_json, load_npz
from crl_approx.numerics.spectrum import infonce_loss, operator_spectrum
from crl_approx.training.cells import train_gmm
from crl_approx.training.evaluation import Grid
from crl_approx.training.population import grid_of, row_mass, train_population

SMOOTH = {"train_panels": 6, "floor_panels": 10, "order": 4, "growth": 1.3}
TRAIN = {
    "width": 16,
    "depth": 3,
    "lr": 3e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "epochs": 2,
    "population_steps": 40,
    "max_loss": 100.0,
}
TAU = 0.5
GAUSSIAN = (2.0, math.sqrt(2.0))  # β = 2: the Gaussian channel of noise variance 1, I = ½ log 2
CUSP = (0.5, 0.19734101384128205)  # β = 0.5 at the same I(X; Y)


def _strip(metrics):
    out = {k: v for k, v in metrics.items() if k != "train_seconds"}
    out["history"] = [{k: v for k, v in h.items() if k != "seconds"} for h in out["history"]]
    return json.dumps(out, sort_keys=True)


@pytest.fixture(scope="module")
def cusp():
    return smoothness_cells.cell_spectra(*CUSP, SMOOTH)


@pytest.fixture(scope="module")
def gaussian():
    return smoothness_cells.cell_spectra(*GAUSSIAN, SMOOTH)


def test_a_grid_with_unnormalised_rows_is_refused(cusp):
    """The channel's grid: rows of mass 1, and L(τ·PMI) its minimum (a shift c(x) leaves the loss
    unchanged, any other perturbation raises it). The same grid with one row's PMI raised by
    log 1.01 is refused: on it a shift c lowers the loss without bound."""
    spec = cusp[0]
    np.testing.assert_allclose(row_mass(spec), 1.0, rtol=0, atol=1e-13)
    l_star = infonce_loss(spec, TAU * spec.pmi, TAU)
    rng = np.random.default_rng(5)
    c = rng.normal(size=(spec.pmi.shape[0], 1))
    assert infonce_loss(spec, TAU * spec.pmi + c, TAU) == pytest.approx(l_star, abs=1e-12)
    for _ in range(5):
        noise = 0.1 * rng.normal(size=spec.pmi.shape)
        assert infonce_loss(spec, TAU * spec.pmi + noise, TAU) > l_star
    pmi = spec.pmi.copy()
    pmi[3] += np.log(1.01)
    bad = dataclasses.replace(spec, pmi=pmi)
    assert infonce_loss(bad, TAU * pmi + 100.0, TAU) < infonce_loss(bad, TAU * pmi, TAU)
    with pytest.raises(ValueError, match="unbounded below"):
        train_population(bad, cusp[1], TRAIN, TAU, 1, [0], 1, "channel", "cpu")
    with pytest.raises(ValueError, match="unbounded below"):
        train_population(cusp[0], bad, TRAIN, TAU, 1, [0], 1, "channel", "cpu")


def test_the_grid_is_the_quadrature_loss(cusp):
    """grid_of's loss (float64) of τ·PMI and of a random score is infonce_loss on the same nodes."""
    spec = cusp[0]
    grid = grid_of(spec, torch.float64, "cpu")
    rng = np.random.default_rng(3)
    for score in (TAU * spec.pmi, rng.normal(size=spec.pmi.shape)):
        got = float(grid.loss(torch.as_tensor(score), TAU))
        assert got == pytest.approx(infonce_loss(spec, score, TAU), rel=1e-12, abs=1e-12)


def test_a_cell_trains_and_writes_every_seed(gaussian, tmp_path):
    """A tiny cell of the Gaussian world: each seed's files, the cell's fields, a per-epoch
    history, and a final excess (on the evaluation grid) that is ≥ 0 and below the zero score's."""
    seeds = [0, 1]
    output = SimpleNamespace(
        **{
            key: [str(tmp_path / f"s{s}" / name) for s in seeds]
            for key, name in (
                ("model", "model.pt"),
                ("metrics", "metrics.json"),
                ("checkpoints", "checkpoints.npz"),
            )
        }
    )
    metrics = smoothness_cells.run_cell(
        *GAUSSIAN, SMOOTH, TRAIN, TAU, 2, seeds, 1, output, device="cpu"
    )
    spec_eval = gaussian[1]
    l_star = infonce_loss(spec_eval, TAU * spec_eval.pmi, TAU)
    zero = infonce_loss(spec_eval, np.zeros_like(spec_eval.pmi), TAU) - l_star
    assert zero == pytest.approx(TAU * 0.5 * math.log(2.0), rel=1e-4)  # τ·I(X; Y)
    for r, seed in enumerate(seeds):
        saved = load_json(tmp_path / f"s{seed}" / "metrics.json")
        assert saved == json.loads(json.dumps(metrics[r]))
        assert (tmp_path / f"s{seed}" / "model.pt").stat().st_size > 0
        ck = load_npz(tmp_path / f"s{seed}" / "checkpoints.npz")
        assert ck["f"].shape == (TRAIN["epochs"], spec_eval.quad.x.size, 2)
        np.testing.assert_array_equal(ck["y_nodes"], spec_eval.quad.y)
        m = metrics[r]
        assert (m["seed"], m["D"], m["world"], m["dataset"]) == (seed, 2, "channel", "channel")
        assert (m["beta"], m["scale"], m["objective"]) == (*GAUSSIAN, "population")
        assert m["L_star"] == l_star
        hist = m["history"]
        assert [h["epoch"] for h in hist] == [1, 2]
        assert hist[-1]["excess_risk"] == pytest.approx(m["mlp_excess_risk"], abs=1e-12)
        assert hist[-1]["val_loss"] == m["final_val_loss"]
        assert math.isfinite(m["mlp_excess_risk"])
        assert -1e-9 <= m["mlp_excess_risk"] < zero


@pytest.mark.parametrize("dim", [1, 4])
def test_a_seed_does_not_depend_on_the_seeds_beside_it(cusp, dim):
    """Seed 1 trained alone and beside seed 0 (listed second): bitwise the same metrics,
    checkpoints and weights; seed 0 is another model."""
    alone = train_population(*cusp, TRAIN, TAU, dim, [1], 1, "channel", "cpu")
    both = train_population(*cusp, TRAIN, TAU, dim, [0, 1], 1, "channel", "cpu")
    assert _strip(alone[1][0]) == _strip(both[1][1])
    for key in alone[2][0]:
        np.testing.assert_array_equal(alone[2][0][key], both[2][1][key])
    for a, b in zip(alone[0].parameters(), both[0].replica(1).parameters(), strict=True):
        assert torch.equal(a, b)
    assert not np.array_equal(both[2][0]["f"], both[2][1]["f"])


def test_training_lowers_the_excess_on_the_gaussian_world(gaussian):
    """β = 2, D = 4 (the PMI has rank 3): the exact excess falls over training, for every seed,
    from the first epoch to the last, by more than a rounding."""
    train = dict(TRAIN, epochs=4, population_steps=120)
    _, metrics, _ = train_population(*gaussian, train, TAU, 4, [0, 1], 1, "channel", "cpu")
    for m in metrics:
        ex = [h["excess_risk"] for h in m["history"]]
        assert ex[-1] < 0.9 * ex[0], ex


def test_on_the_mixture_it_is_train_gmms_population_branch():
    """The mixture's spectra (training: population_nodes; evaluation: quadrature_nodes) give the
    metrics, checkpoints and weights of train_gmm's population objective, bitwise."""
    from crl_approx.models.gmm import GaussianMixture

    gmm = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}
    gmm["quadrature_nodes"] = 30
    train = dict(TRAIN, population_nodes=9)
    mix = GaussianMixture.from_config(gmm)
    spec_train, spec_eval = (operator_spectrum(mix, n) for n in (9, 30))
    grid = Grid.from_mixture(mix, 9, torch.float32, "cpu")
    for a, b in zip(vars(grid).values(), vars(grid_of(spec_train)).values(), strict=True):
        assert torch.equal(a, b)
    ours = train_population(spec_train, spec_eval, train, TAU, 2, [0, 1], 1, "gmm", "cpu")
    theirs = train_gmm(gmm, train, TAU, 2, [0, 1], "population", 1, device="cpu")
    for r in range(2):
        assert _strip(ours[1][r]) == _strip(theirs[1][r])
        for key in theirs[2][r]:
            np.testing.assert_array_equal(ours[2][r][key], theirs[2][r][key])
    for a, b in zip(ours[0].parameters(), theirs[0].parameters(), strict=True):
        assert torch.equal(a, b)
