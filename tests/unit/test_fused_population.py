"""The fused population step (train.step_kernels = fused: native_step.cpp's fused_population_step,
fused_kernels.h's population_tail and unit columns) against an answer the code does not compute
itself: the population InfoNCE loss and its gradient by float64 autograd on the same weights and
grid, for the inner score and the cosine score (log c learnt or fixed), D = 1 to 8 (the fused
tail) and beyond (ATen's tail); on the mixture's grid and on a grid with m ≠ n, m not a multiple of
16 and zero weights (log wy = −inf, the channel's grids); shapes the kernels do not take run the
ATen step bitwise; a wrong joint term is far outside the tolerance; three stacked seeds each train
bitwise as their own run (tests/unit/test_batched_training.py runs whole jobs)."""

import hashlib
import math

import pytest
import torch

from conftest import mixture_grid
from crl_approx.training.evaluation import Grid
from crl_approx.training.loops import make_optimizer, population_loss, run_steps
from crl_approx.training.towers import build_model

TAU = 0.3
TRAIN = {"width": 32, "depth": 3, "lr": 3e-3, "weight_decay": 1e-4, "schedule": "cosine"}
COSINE = {"score": "cosine", "cosine_scale": 1.7}


def _model(dim, train, seeds=(0, 1, 2), kernels="fused"):
    return build_model(list(seeds), 1, 1, dim, TRAIN | train | {"step_kernels": kernels})


def ragged_grid(n=21, m=37, zeros=(0, 5, 36)):
    """n x-nodes, m y-nodes (neither a multiple of 16), some wy zero: log wy = −inf there."""
    gen = torch.Generator().manual_seed(3)
    x, y = torch.linspace(-2, 2, n)[:, None], torch.linspace(-3, 1, m)[:, None]
    wx = torch.softmax(torch.randn(n, generator=gen), 0)
    wy = torch.softmax(torch.randn(m, generator=gen), 0)
    wy[list(zeros)] = 0.0
    ratio = torch.exp(0.5 * torch.randn(n, m, generator=gen) - (x - y.t()).abs())
    joint = wx[:, None] * wy[None, :] * ratio
    return Grid(x, y, wx, torch.log(wy), joint)


def _reference(model, grid, tau):
    """Per replica: the population loss and its gradient in float64 by autograd, in
    manual._weights's layouts (the last layer transposed), log c's last where learnt."""
    out = []
    log_wy, wx, joint = (t.double() for t in (grid.log_wy, grid.wx, grid.joint))
    learn = isinstance(getattr(model, "log_scale", None), torch.nn.Parameter)
    for r in range(model.replicas):
        towers = [
            [p.detach()[r].double().clone().requires_grad_(True) for p in params]
            for params in (model.f, model.g)
        ]
        log_c = None
        if model.score == "cosine":
            log_c = model.log_scale.detach()[r].double().clone().requires_grad_(learn)

        def tower(ws, v):
            h = v
            for i in range(0, len(ws) - 2, 2):
                h = torch.relu(h @ ws[i] + ws[i + 1])
            return h @ ws[-2] + ws[-1]

        f, g = tower(towers[0], grid.x.double()), tower(towers[1], grid.y.double())
        if log_c is None:
            s = f @ g.t()
        else:
            uf = f / f.norm(dim=1, keepdim=True).clamp_min(1e-12)  # F.normalize's
            ug = g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
            s = torch.exp(log_c) * uf @ ug.t()
        lse = torch.logsumexp(s / tau + log_wy, dim=1)
        loss = tau * (lse * wx).sum() - (joint.reshape(s.shape) * s).sum()
        params = towers[0] + towers[1] + ([log_c] if learn else [])
        grads = torch.autograd.grad(loss, [*params, s])
        # log c's gradient is Σ_ij ∂L/∂S_ij·S_ij: the size of its terms, for its rounding
        terms = float((grads[-1] * s).detach().abs().sum())
        grads = grads[:-1]
        n = len(towers[0])
        laid = [gr.t() if i < 2 * n and i % n >= n - 2 else gr for i, gr in enumerate(grads)]
        out.append((loss.item(), [gr.reshape(-1) if gr.dim() == 0 else gr for gr in laid], terms))
    return out


def _check(model, grid, fused_replicas):
    step = population_loss(model, grid, TAU)
    weights = step.weights
    assert weights.native is not None and weights.native.fused_population
    losses = step()
    assert weights.native.fused_replicas == fused_replicas
    per = len(weights.grads) // model.replicas
    for r, (loss, grads, terms) in enumerate(_reference(model, grid, TAU)):
        # a difference of two O(1) sums: float32's rounding of those, absolute
        assert abs(losses[r].item() - loss) <= 1e-6 + 2e-6 * abs(loss), (losses[r], loss)
        got = weights.grads[r * per : (r + 1) * per]
        assert len(got) == len(grads)
        n = len(model.f)
        for i, (a, b) in enumerate(zip(got, grads, strict=True)):
            assert a.shape == b.shape, i
            scale = b.abs().max().item()
            # a tensor whose gradient is a sum that cancels (the last biases: Σ_j q_ij = 0 for
            # normalised rows) keeps the rounding of its terms, which are the tower's size
            tower = grads[:n] if i < n else grads[n : 2 * n]
            size = max(t.abs().max().item() for t in tower) if i < 2 * n else terms
            # (at D = 1 the cosine score's tower gradient is 0: float64 autograd's, noise)
            floor = max(1e-6 * size, 1e-10)
            assert (a.double() - b).abs().max().item() <= 3e-5 * scale + floor, (i, scale)


#: the mixture's grid at 24 and at 64 nodes per component (the default config's: 128 rows, two
#: chunks of ∂L/∂g's partial sums), a ragged grid with zero weights, and one of 150 × 70 (three
#: chunks, m ≠ n the other way)
GRIDS = {
    "mixture": lambda: mixture_grid(),
    "mixture128": lambda: mixture_grid(64),
    "ragged": ragged_grid,
    "tall": lambda: ragged_grid(150, 70, (3, 69)),
}


@pytest.mark.parametrize("grid", sorted(GRIDS))
@pytest.mark.parametrize("dim", [1, 2, 8, 12])
@pytest.mark.parametrize(
    "score", [{}, COSINE, COSINE | {"cosine_scale_learnable": False}], ids=["inner", "cos", "cos0"]
)
def test_the_fused_population_step_is_the_gradient_of_the_population_loss(
    compiled, grid, dim, score
):
    _check(_model(dim, score), GRIDS[grid](), 3 if dim <= 8 else 0)


def test_at_d1_the_cosine_score_moves_no_tower_weight(compiled):
    """Every unit vector is ±1 at D = 1: the towers' gradient is exactly zero (manual's too)."""
    step = population_loss(_model(1, COSINE), ragged_grid(), TAU)
    step()
    grads = step.weights.grads
    per = len(grads) // 3
    towers = [g for r in range(3) for g in grads[r * per : (r + 1) * per - 1]]
    assert all(not g.any() for g in towers)
    assert all(grads[(r + 1) * per - 1].abs().item() > 0 for r in range(3))  # log c moves


@pytest.mark.parametrize("side", ["f", "g"])
def test_outputs_below_the_norm_clamp(compiled, side):
    """A tower whose outputs are shorter than 1e-12 (F.normalize's clamp): u = t/1e-12, and the
    backward drops the projection there (the clamped columns' ∂t = c·∂u/1e-12)."""
    model, grid = _model(2, COSINE), ragged_grid()
    params = getattr(model, side)
    nodes = grid.x if side == "f" else grid.y

    def norms():
        ws = [p.detach()[0].double() for p in params]
        h = nodes.double()
        for i in range(0, len(ws) - 2, 2):
            h = torch.relu(h @ ws[i] + ws[i + 1])
        return (h @ ws[-2] + ws[-1]).norm(dim=1)

    with torch.no_grad():  # the outputs scale with the last layer: the longest to 0.8e-12
        scale = 0.8e-12 / norms().max().item()
        for p in params[-2:]:
            p.mul_(scale)
    # every node clamped, and u = t/1e-12 of order 1 (where the projection would matter)
    assert 0.05e-12 < norms().min() and norms().max() < 1e-12
    _check(model, grid, 3)


def test_one_and_two_hidden_layers(compiled):
    _check(_model(3, {"depth": 2, "width": 16}), ragged_grid(), 3)
    _check(_model(5, {"depth": 4}), ragged_grid(), 3)


def test_a_wrong_joint_term_is_far_outside_the_tolerance(compiled):
    grid = ragged_grid()
    wrong = Grid(grid.x, grid.y, grid.wx, grid.log_wy, grid.joint * 1.01)
    model = _model(2, {})
    step = population_loss(model, wrong, TAU)
    step()
    right = _reference(model, grid, TAU)[0][1]
    got = step.weights.grads[: len(right)]
    pairs = zip(got, right, strict=True)
    gap = max(float((a.double() - b).abs().max() / b.abs().max()) for a, b in pairs)
    assert gap > 1e-3


@pytest.mark.parametrize("score", [{}, COSINE], ids=["inner", "cosine"])
def test_shapes_the_kernels_do_not_take_run_the_aten_step_bitwise(compiled, score):
    grid = ragged_grid()
    runs = []
    for kernels in ("fused", "aten"):
        step = population_loss(_model(2, score | {"width": 24}, kernels=kernels), grid, TAU)
        runs.append((step(), step.weights.grads))
        assert getattr(step.weights.native, "fused_replicas", 0) == 0
    assert torch.equal(runs[0][0], runs[1][0])
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1], strict=True))


def _train(seeds, kernels, score, steps=12, dim=2):
    model = _model(dim, score, seeds=seeds, kernels=kernels)
    step = population_loss(model, ragged_grid(), TAU)
    opt = make_optimizer(step.weights, TRAIN, steps)
    losses = torch.stack([run_steps(model, opt, step, 1) for _ in range(steps)])
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    return losses, model, digest.hexdigest()


@pytest.mark.parametrize("score", [{}, COSINE], ids=["inner", "cosine"])
def test_a_replica_trains_bitwise_as_its_own_run_with_the_fused_kernels(compiled, score):
    stacked, model, digest = _train([0, 1, 2], "fused", score)
    for r, seed in enumerate([0, 1, 2]):
        alone, one, _ = _train([seed], "fused", score)
        assert torch.equal(stacked[:, r], alone[:, 0])
        for p, q in zip(model.parameters(), one.parameters(), strict=True):
            assert torch.equal(p.detach()[r], q.detach()[0])
    assert _train([0, 1, 2], "fused", score)[2] == digest
    # the fused kernels' rounding is not ATen's: the same run with ATen's ends elsewhere, close by
    aten, _, aten_digest = _train([0, 1, 2], "aten", score)
    assert aten_digest != digest
    assert torch.allclose(aten, stacked, rtol=1e-4, atol=1e-6)
    assert math.isfinite(float(stacked.sum()))
