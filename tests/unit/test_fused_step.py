"""The fused sampled step (train.step_kernels = fused: native_step.cpp's fused_in_batch_step and
fused_in_batch_losses, fused_kernels.h) against answers the code does not compute itself: the
InfoNCE loss (the step's and validation's) and its gradient by float64 autograd on the same
weights and batch, for every branch of the kernels (a narrow and a wide first layer, one to three
hidden layers, the fused tail up to D = 8 and ATen's beyond); shapes the kernels do not take run
the ATen step, bitwise; the cosine score keeps ATen's step; three stacked seeds each train
bitwise as their own run; an unknown kernel name is refused."""

import hashlib

import pytest
import torch

from crl_approx.training import native
from crl_approx.training.batches import pool_batches
from crl_approx.training.loops import make_optimizer, run_steps
from crl_approx.training.manual import ReplicaWeights, in_batch_losses, in_batch_step
from crl_approx.training.towers import build_model

TAU = 0.3
TRAIN = {"width": 32, "depth": 3, "lr": 3e-3, "weight_decay": 1e-4, "schedule": "cosine"}


def _model(d_in, dim, train, seeds=(0, 1, 2), kernels="fused"):
    """d_in: one input width for both towers, or (d_x, d_y)."""
    d_x, d_y = (d_in, d_in) if isinstance(d_in, int) else d_in
    return build_model(list(seeds), d_x, d_y, dim, TRAIN | train | {"step_kernels": kernels})


def _batch(d_in, batch, replicas=3, seed=7):
    d_x, d_y = (d_in, d_in) if isinstance(d_in, int) else d_in
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(replicas, batch, d_x, generator=gen)
    y = torch.randn(replicas, batch, d_y, generator=gen)
    y[..., : min(d_x, d_y)] += x[..., : min(d_x, d_y)]  # y depends on x
    return x, y


def _reference(model, x, y, tau):
    """Per replica: the loss τ·mean_i(lse_j S_ij − S_ii), S = f(x)ᵀg(y)/τ, and its gradient in
    float64 by autograd, in manual._weights's layouts (the last layer transposed)."""
    out = []
    for r in range(model.replicas):
        towers = []
        for params in (model.f, model.g):
            ws = [p.detach()[r].double().clone().requires_grad_(True) for p in params]
            towers.append(ws)

        def tower(ws, v):
            h = v
            for i in range(0, len(ws) - 2, 2):
                h = torch.relu(h @ ws[i] + ws[i + 1])
            return h @ ws[-2] + ws[-1]

        f, g = tower(towers[0], x[r].double()), tower(towers[1], y[r].double())
        s = f @ g.t() / tau
        loss = tau * (torch.logsumexp(s, 1) - s.diagonal()).mean()
        grads = torch.autograd.grad(loss, towers[0] + towers[1])
        last = len(towers[0]) - 2
        laid = [gr.t() if i % len(towers[0]) >= last else gr for i, gr in enumerate(grads)]
        out.append((loss.item(), laid))
    return out


#: (d_in, D, depth, widths, batch): the mixture's narrow input and D = 2; the LCGM's 16 inputs at
#: D = 8; one hidden layer; three (and a batch of a chunk and a part); D = 12 and 20 (ATen's tail,
#: the fused layers); a wide input (ATen's first layer) at depth 3 and 2; x narrow and y wide;
#: towers of two widths; a batch of three chunks
SHAPES = [
    (1, 2, 3, 32, 64),
    (16, 8, 3, 32, 48),
    (3, 1, 2, 16, 32),
    (2, 4, 4, 32, 80),
    (1, 12, 3, 32, 64),
    (1, 20, 3, 16, 32),
    (40, 3, 3, 32, 32),
    (40, 2, 2, 16, 32),
    ((1, 40), 4, 3, 32, 48),
    (2, 3, 3, (16, 48), 32),
    (1, 2, 3, 16, 192),
]


@pytest.mark.parametrize(("d_in", "dim", "depth", "width", "batch"), SHAPES)
def test_the_fused_step_is_the_gradient_of_the_infonce_loss(
    compiled, d_in, dim, depth, width, batch
):
    if isinstance(width, int):
        widths = {"width": width}
    else:
        widths = {"width_f": width[0], "width_g": width[1]}
    model = _model(d_in, dim, {"depth": depth, "width": 32} | widths)
    weights = ReplicaWeights(model, compiled=True)
    assert weights.native.fused
    x, y = _batch(d_in, batch)
    reference = _reference(model, x, y, TAU)
    # validation's losses first (the step's gradients do not move the weights)
    val = in_batch_losses(weights, x, y, TAU)
    losses = in_batch_step(weights, x, y, TAU)
    assert weights.native.fused_replicas == 3  # the fused kernels ran, for every seed
    for r, (loss, grads) in enumerate(reference):
        assert abs(losses[r].item() - loss) <= 2e-6 * abs(loss)
        assert abs(val[r].item() - loss) <= 2e-6 * abs(loss)
        n = len(grads)
        for i, (got, want) in enumerate(
            zip(weights.grads[r * n : (r + 1) * n], grads, strict=True)
        ):
            assert got.shape == want.shape, i
            scale = want.abs().max().item()
            # g's last bias has a zero gradient (softmax rows sum to one): rounding alone
            tol = 2e-5 * scale if scale > 1e-6 else 1e-7
            assert (got.double() - want).abs().max().item() <= tol, (i, scale)


@pytest.mark.parametrize(
    ("d_in", "width", "batch"),
    [(1, 24, 64), (1, 32, 40)],
    ids=["width not a multiple of 16", "batch not a multiple of 16"],
)
def test_shapes_the_kernels_do_not_take_run_the_aten_step_bitwise(compiled, d_in, width, batch):
    x, y = _batch(d_in, batch)
    runs = []
    for kernels in ("fused", "aten"):
        weights = ReplicaWeights(_model(d_in, 2, {"width": width}, kernels=kernels), compiled=True)
        val = in_batch_losses(weights, x, y, TAU)
        runs.append((in_batch_step(weights, x, y, TAU), weights.grads, val))
        assert getattr(weights.native, "fused_replicas", 0) == 0
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][2], runs[1][2])
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1], strict=True))


def test_the_cosine_score_keeps_the_aten_step(compiled):
    x, y = _batch(1, 64)
    runs = []
    for kernels in ("fused", "aten"):
        model = _model(1, 2, {"score": "cosine"}, kernels=kernels)
        weights = ReplicaWeights(model, compiled=True)
        assert not weights.native.fused
        runs.append((in_batch_step(weights, x, y, TAU), weights.grads))
    assert torch.equal(runs[0][0], runs[1][0])
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1], strict=True))


def _train(seeds, kernels, steps=10, d_in=1, dim=2):
    model = _model(d_in, dim, {}, seeds=seeds, kernels=kernels)
    weights = ReplicaWeights(model, compiled=True)
    gens = [torch.Generator().manual_seed(100 + s) for s in seeds]
    x = torch.stack([torch.randn(8 * 64, d_in, generator=g) for g in gens])
    y = x + 0.5 * torch.stack([torch.randn(8 * 64, d_in, generator=g) for g in gens])
    batches = pool_batches(x, y, [torch.Generator().manual_seed(s) for s in seeds], 64)

    def step():
        return in_batch_step(weights, *next(batches), TAU)

    step.weights = weights
    opt = make_optimizer(weights, TRAIN, steps)
    losses = torch.stack([run_steps(model, opt, step, 1) for _ in range(steps)])
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    return losses, model, digest.hexdigest()


def test_a_replica_trains_bitwise_as_its_own_run_with_the_fused_kernels(compiled):
    stacked, model, digest = _train([0, 1, 2], "fused")
    for r, seed in enumerate([0, 1, 2]):
        alone, one, _ = _train([seed], "fused")
        assert torch.equal(stacked[:, r], alone[:, 0])
        for p, q in zip(model.parameters(), one.parameters(), strict=True):
            assert torch.equal(p.detach()[r], q.detach()[0])
    again = _train([0, 1, 2], "fused")
    assert torch.equal(again[0], stacked) and again[2] == digest
    # the fused kernels' rounding is not ATen's: the same run with ATen's ends elsewhere, close by
    aten, _, aten_digest = _train([0, 1, 2], "aten")
    assert aten_digest != digest
    assert torch.allclose(aten, stacked, rtol=1e-4, atol=0)


def test_the_job_log_names_the_kernels_the_step_ran(compiled, caplog):
    """Each kind logged once per process (native.say_kernels is cached: cleared here)."""
    from crl_approx.runtime import KERNELS_LINE

    native.say_kernels.cache_clear()
    with caplog.at_level("INFO", logger="crl_approx.training.native"):
        for width in (32, 24):  # the second: shapes the kernels do not take
            weights = ReplicaWeights(_model(1, 2, {"width": width}), compiled=True)
            in_batch_step(weights, *_batch(1, 64), TAU)
            in_batch_step(weights, *_batch(1, 64), TAU)
    said = [r.getMessage() for r in caplog.records if "step kernels" in r.getMessage()]
    assert said == [
        KERNELS_LINE.format(kernels="fused"),
        KERNELS_LINE.format(kernels="aten (shapes the fused kernels do not take)"),
    ]
    native.say_kernels.cache_clear()


def test_an_unknown_kernel_name_is_refused():
    with pytest.raises(ValueError, match="step_kernels"):
        _model(1, 2, {}, kernels="blas")
