"""The hand-written sampled step (crl_approx.training.manual) against autograd: the same model,
the same batches, many optimiser steps, and every parameter and every loss bitwise equal; for one
and for three stacked seeds, the mixture's input dimension and the LCGM's."""

import pytest
import torch

from crl_approx.training.batches import pool_batches
from crl_approx.training.loops import batch_loss, make_optimizer, population_loss, run_steps
from crl_approx.training.towers import build_model

#: not a power of two: 1/τ and τ/B round, so a reordered scale would show
TAU = 0.3
TRAIN = {
    "width": 32,
    "depth": 3,
    "lr": 3e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "score": "inner",
}


def train(seeds, d_in: int, dim: int, by_hand: bool, steps: int = 25):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    n, batch = 8 * 64, 64
    x = torch.randn(len(seeds), n, d_in, generator=gen)
    y = x + 0.5 * torch.randn(len(seeds), n, d_in, generator=gen)
    model = build_model(seeds, d_in, d_in, dim, TRAIN)
    opt = make_optimizer(model, TRAIN, steps)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    step = batch_loss(model, pool_batches(x, y, gens, batch), TAU, by_hand=by_hand)
    losses = [run_steps(model, opt, step, 1) for _ in range(steps)]
    return model, torch.stack(losses)


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
@pytest.mark.parametrize(("d_in", "dim"), [(1, 2), (16, 8)])
def test_the_hand_written_step_is_autograds_step_bitwise(seeds, d_in, dim):
    auto, auto_losses = train(seeds, d_in, dim, by_hand=False)
    hand, hand_losses = train(seeds, d_in, dim, by_hand=True)
    assert torch.equal(auto_losses, hand_losses)
    for (name, a), (_, b) in zip(auto.named_parameters(), hand.named_parameters(), strict=True):
        assert torch.equal(a, b), name
    # and the step moved the model (a step that wrote no gradient would leave it at its init)
    fresh = build_model(seeds, d_in, d_in, dim, TRAIN)
    assert not torch.equal(next(fresh.parameters()), next(hand.parameters()))


def test_the_hand_written_step_is_the_default_for_the_inner_score_only():
    model = build_model([0], 1, 1, 2, TRAIN)
    assert getattr(batch_loss(model, iter(()), 0.5), "sets_grad", False)
    cosine = build_model([0], 1, 1, 2, TRAIN | {"score": "cosine"})
    assert not getattr(batch_loss(cosine, iter(()), 0.5), "sets_grad", False)


def train_population(seeds, dim: int, by_hand: bool, steps: int = 25):
    import yaml

    from conftest import REPO
    from crl_approx.models.gmm import GaussianMixture
    from crl_approx.training.evaluation import Grid

    gmm = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["gmm"]
    grid = Grid.from_mixture(GaussianMixture.from_config(gmm), 24, torch.float32, "cpu")
    model = build_model(seeds, 1, 1, dim, TRAIN)
    opt = make_optimizer(model, TRAIN, steps)
    step = population_loss(model, grid, TAU, by_hand=by_hand)
    assert getattr(step, "sets_grad", False) == by_hand

    losses = [run_steps(model, opt, step, 1) for _ in range(steps)]
    return model, torch.stack(losses)


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
@pytest.mark.parametrize("dim", [1, 4])
def test_the_hand_written_population_step_is_autograds_step_bitwise(seeds, dim):
    auto, auto_losses = train_population(seeds, dim, by_hand=False)
    hand, hand_losses = train_population(seeds, dim, by_hand=True)
    assert torch.equal(auto_losses, hand_losses)
    for (name, a), (_, b) in zip(auto.named_parameters(), hand.named_parameters(), strict=True):
        assert torch.equal(a, b), name
    assert hand_losses[-1].sum() < hand_losses[0].sum()  # it trained
