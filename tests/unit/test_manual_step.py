"""The hand-written steps (crl_approx.training.manual) against autograd, a second method: the same
model and batch, one step's loss and gradients equal to float32 rounding (the manual steps keep
every tower's output transposed, so their D-wide products round in another order); a closed form
the gradient must meet (the target tower's last bias moves no loss); a short training run close
to autograd's; and a wrong derivative (an extra 1/τ on ∂g, a dropped joint term) far outside the
tolerance. These are the Python steps (CRL_NATIVE_STEP=0 below): tests/unit/test_native_step.py
ties their compiled twins to them bitwise."""

import math

import pytest
import torch

from conftest import STEP_TAU, STEP_TRAIN, mixture_grid
from crl_approx.training.batches import pool_batches
from crl_approx.training.loops import (
    batch_loss,
    block_losses,
    in_batch_loss,
    make_optimizer,
    population_loss,
    run_steps,
)
from crl_approx.training.towers import build_model

TAU, TRAIN = STEP_TAU, STEP_TRAIN
#: one step's gradient, per tower, relative to its norm: float32 rounding of a reordered sum
GRAD_RTOL = 1e-5


@pytest.fixture(autouse=True)
def python_steps(monkeypatch):
    """The Python steps (a monkeypatched derivative must reach the step that runs)."""
    monkeypatch.setenv("CRL_NATIVE_STEP", "0")


def _batch(seeds, d_in, n=64):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(len(seeds), n, d_in, generator=gen)
    return x, x + 0.5 * torch.randn(len(seeds), n, d_in, generator=gen)


def _grads(model):
    out = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return out


def _tower_gaps(model, auto, hand):
    """Per tower and replica: ‖hand − autograd‖ / ‖autograd‖ over the tower's parameters."""
    n_f = len(model.f)
    gaps = []
    for lo, hi in ((0, n_f), (n_f, len(auto))):
        for r in range(model.replicas):
            a = torch.cat([g[r].flatten() for g in auto[lo:hi]])
            h = torch.cat([g[r].flatten() for g in hand[lo:hi]])
            gaps.append(float((a - h).norm() / a.norm()))
    return gaps


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
@pytest.mark.parametrize(("d_in", "dim"), [(1, 2), (16, 8), (3, 1)])
def test_the_hand_written_step_is_autograds_step_to_rounding(seeds, d_in, dim):
    model = build_model(seeds, d_in, d_in, dim, TRAIN)
    x, y = _batch(seeds, d_in)
    auto_loss = in_batch_loss(model, x, y, TAU)
    auto_loss.sum().backward()
    auto = _grads(model)
    step = batch_loss(model, iter([(x, y)]), TAU, by_hand=True)
    hand_loss = step()
    hand = step.weights.stacked_grads()
    torch.testing.assert_close(hand_loss, auto_loss.detach(), rtol=1e-6, atol=0)
    assert max(_tower_gaps(model, auto, hand)) < GRAD_RTOL
    # the closed form: g's last bias adds c·f(x_i) to every score of row i, which no softmax
    # sees, so its gradient is zero up to rounding (both methods), while its weight's is not
    for grads in (auto, hand):
        assert grads[-1].abs().max() < 1e-5 * grads[-2].abs().max()
    # validation's loss is the step's forward
    model.eval()
    from crl_approx.training.manual import ReplicaWeights, in_batch_losses

    val = block_losses(model, x, y, TAU, 32)
    # bitwise the step's forward (at these sizes autograd's forward rounds alike, so this does not
    # tell which one validation runs; loops.block_losses names it)
    assert torch.equal(val, _halves(in_batch_losses, ReplicaWeights(model), x, y))
    assert torch.equal(val, block_losses(model, x, y, TAU, 32, step.weights))
    torch.testing.assert_close(val, _halves(in_batch_loss, model, x, y))  # autograd's, to rounding


def _halves(losses, model, x, y):
    total = torch.zeros(x.shape[0])
    with torch.no_grad():
        for i in (0, 32):
            total += losses(model, x[:, i : i + 32], y[:, i : i + 32], TAU)
    return total / 2


def test_a_wrong_derivative_is_far_outside_the_tolerance(monkeypatch):
    """The tolerance can fail: the step with ∂/∂g scaled by 1/τ (the slip of an earlier draft of
    this layout) is off by a factor the test sees."""
    from crl_approx.training import manual

    model = build_model([0], 1, 1, 2, TRAIN)
    x, y = _batch([0], 1)
    in_batch_loss(model, x, y, TAU).sum().backward()
    auto = _grads(model)
    real = manual._tower_backward
    calls = []

    def slipped(ws, saved, grad_t):
        calls.append(1)
        return real(ws, saved, grad_t / TAU if len(calls) % 2 == 0 else grad_t)

    monkeypatch.setattr(manual, "_tower_backward", slipped)
    step = batch_loss(model, iter([(x, y)]), TAU, by_hand=True)
    step()
    gaps = _tower_gaps(model, auto, step.weights.stacked_grads())
    assert gaps[0] < GRAD_RTOL and gaps[1] > 1.0


def test_the_hand_written_step_is_the_default_for_either_score(monkeypatch):
    for score in ("inner", "cosine"):
        model = build_model([0], 1, 1, 2, TRAIN | {"score": score})
        assert hasattr(batch_loss(model, iter(()), 0.5), "weights")
        assert hasattr(population_loss(model, mixture_grid(), 0.5), "weights")
    monkeypatch.setenv("CRL_AUTOGRAD_STEP", "1")  # benchmarks/step_levers.py's autograd mode
    assert not hasattr(batch_loss(model, iter(()), 0.5), "weights")


def train(seeds, d_in: int, dim: int, by_hand: bool, steps: int = 25):
    torch.manual_seed(0)
    x, y = _batch(seeds, d_in, 8 * 64)
    model = build_model(seeds, d_in, d_in, dim, TRAIN)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    step = batch_loss(model, pool_batches(x, y, gens, 64), TAU, by_hand=by_hand)
    opt = make_optimizer(getattr(step, "weights", model), TRAIN, steps)
    losses = [run_steps(model, opt, step, 1) for _ in range(steps)]
    return model, torch.stack(losses)


@pytest.mark.parametrize(("d_in", "dim"), [(1, 2), (16, 8)])
def test_training_by_hand_follows_autograds_training(d_in, dim):
    """25 AdamW steps: the loss curves agree to 1e-4 (Adam divides by √v, so rounding in a
    near-zero gradient moves its element by up to lr per step; the losses stay close)."""
    auto, auto_losses = train([0, 1, 2], d_in, dim, by_hand=False)
    hand, hand_losses = train([0, 1, 2], d_in, dim, by_hand=True)
    auto, hand = auto.requires_grad_(False), hand.requires_grad_(False)
    torch.testing.assert_close(hand_losses, auto_losses, rtol=1e-4, atol=0)
    assert hand_losses[-1].sum() < hand_losses[0].sum()  # it trained
    # every weight within 1 %, but g's last bias: its gradient is rounding noise (the closed form
    # above), which Adam's 1/√v scales up to lr-sized moves in either method
    params = list(zip(auto.parameters(), hand.parameters(), strict=True))[:-1]
    assert max(float((a - b).norm() / a.norm()) for a, b in params) < 1e-2


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
@pytest.mark.parametrize("dim", [1, 4])
def test_the_hand_written_population_step_is_autograds_step_to_rounding(seeds, dim):
    grid = mixture_grid()
    model = build_model(seeds, 1, 1, dim, TRAIN)
    auto_loss = population_loss(model, grid, TAU, by_hand=False)()
    auto_loss.sum().backward()
    auto = _grads(model)
    step = population_loss(model, grid, TAU, by_hand=True)
    # the loss is a difference of two O(1) sums: float32's rounding of those, absolute
    torch.testing.assert_close(step(), auto_loss.detach(), rtol=1e-6, atol=1e-7)
    hand = step.weights.stacked_grads()
    assert max(_tower_gaps(model, auto, hand)) < GRAD_RTOL
    # Σ_j joint_ij = w_i (the joint's x-marginal): g's last bias moves no loss here either
    for grads in (auto, hand):
        assert grads[-1].abs().max() < 1e-5 * grads[-2].abs().max()


def test_a_dropped_joint_term_is_far_outside_the_tolerance():
    grid = mixture_grid()
    model = build_model([0], 1, 1, 2, TRAIN)
    population_loss(model, grid, TAU, by_hand=False)().sum().backward()
    auto = _grads(model)
    from crl_approx.training import manual

    step = population_loss(model, grid, TAU, by_hand=True)
    consts = next(c.cell_contents for c in step.__closure__ if hasattr(c.cell_contents, "joint"))
    consts.joint = torch.zeros_like(consts.joint)  # ∂/∂S without − joint
    assert isinstance(consts, manual.PopulationConstants)
    step()
    assert min(_tower_gaps(model, auto, step.weights.stacked_grads())) > 0.1


def test_replica_weights_write_back_puts_each_element_where_the_model_holds_it():
    """Known answer: replica 1's own transposed last-layer weight, element (d, w), is the stacked
    parameter's [1, w, d]; a hidden weight's (i, j) is [1, i, j]; nothing else moves."""
    from crl_approx.training.manual import ReplicaWeights

    model = build_model([0, 1, 2], 3, 3, 2, TRAIN).requires_grad_(False)
    before = [p.clone() for p in model.parameters()]
    weights = ReplicaWeights(model)
    weights.write_back()
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    wf = weights.towers[1][0]
    assert wf[-2].shape == (2, 32) and wf[0].shape == (3, 32)  # (D, width); (d_in, width)
    wf[-2][1, 5] = 7.0
    wf[0][2, 4] = -3.0
    weights.write_back()
    last, first = model.f[-2], model.f[0]
    assert last[1, 5, 1] == 7.0 and first[1, 2, 4] == -3.0
    changed = [int((a != b).sum()) for a, b in zip(before, model.parameters(), strict=True)]
    assert changed == [1, 0, 0, 0, 1, 0] + [0] * 6


def _per_step_copies(model, batches, steps: int):
    """The hand-written steps as the releases before 1.14.0 ran them, a second method: each step
    copies every replica's weights out of the stacked parameters, and stacked AdamW (replica
    views) updates them from the gradients stacked back."""
    from crl_approx.training.manual import ReplicaWeights, in_batch_step
    from crl_approx.training.optim import FusedAdamW, lr_schedule

    opt = FusedAdamW(model.parameters(), lr_schedule(TRAIN, steps), TRAIN["weight_decay"])
    for _ in range(steps):
        weights = ReplicaWeights(model)
        in_batch_step(weights, *next(batches), TAU)
        for p, g in zip(model.parameters(), weights.stacked_grads(), strict=True):
            p.grad = g
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize(("width", "dim"), [(32, 2), (32, 8), (2, 2), (4, 1)])
def test_weights_kept_between_steps_train_bitwise_as_per_step_copies(width, dim):
    """30 steps with the weights kept in the steps' layouts (run_steps) against per-step copies
    (:func:`_per_step_copies`): bitwise equal where width·D is a multiple of the AdamW kernel's
    vector width or below it, as in the shipped configs. (Elsewhere, e.g. 20·3 = 60, the
    transposed last layer puts other elements in the kernel's scalar tail, which may round
    differently: on this project's hosts the two runs part after some steps, not at every one.)"""
    train = TRAIN | {"width": width}
    seeds, steps = [0, 1, 2], 30
    x, y = _batch(seeds, 2, 8 * 64)
    runs = []
    for kept in (True, False):
        model = build_model(seeds, 2, 2, dim, train)
        batches = pool_batches(x, y, [torch.Generator().manual_seed(s) for s in seeds], 64)
        if kept:
            step = batch_loss(model, batches, TAU, by_hand=True)
            run_steps(model, make_optimizer(step.weights, TRAIN, steps), step, steps)
            runs.append([p.detach().clone() for p in model.parameters()])
        else:
            runs.append(_per_step_copies(model, batches, steps))
    assert all(torch.equal(a, b) for a, b in zip(*runs, strict=True))
    start = build_model(seeds, 2, 2, dim, train)
    assert all(not torch.equal(a, b) for a, b in zip(runs[0], start.parameters(), strict=True))


def test_after_step_reads_the_current_weights_at_the_steps_it_names():
    """The recorder's early steps read the model mid-epoch: with the weights kept in the steps'
    layouts, run_steps writes them back first (at the steps ``reads_model`` names), so step 3's
    model there equals the model after 3 steps of a separate run."""
    seeds = [0, 1]
    x, y = _batch(seeds, 1, 8 * 64)

    def fresh():
        model = build_model(seeds, 1, 1, 2, TRAIN)
        step = batch_loss(
            model, pool_batches(x, y, [torch.Generator().manual_seed(s) for s in seeds], 64), TAU
        )
        return model, step, make_optimizer(step.weights, TRAIN, 8)

    model, step, opt = fresh()
    seen = {}

    def after_step(t):
        seen[t] = model.f[0].detach().clone()

    run_steps(model, opt, step, 8, after_step, reads_model=lambda t: t == 3)
    ref, ref_step, ref_opt = fresh()
    run_steps(ref, ref_opt, ref_step, 3)
    assert torch.equal(seen[3], ref.f[0].detach())
    assert not torch.equal(seen[2], ref.f[0].detach())  # step 2's read was not written back


# --- the cosine score: S = c·⟨f/|f|, g/|g|⟩, log c learnt or fixed --------------------------------
COSINE = TRAIN | {"score": "cosine", "cosine_scale": 1.7, "cosine_scale_learnable": True}


def _cosine_steps(model, objective, x=None, y=None):
    """Autograd's step and the hand-written one on the same model and data: (losses, grads)."""
    if objective == "samples":
        auto_loss = in_batch_loss(model, x, y, TAU)
        step = batch_loss(model, iter([(x, y)]), TAU, by_hand=True)
    else:
        grid = mixture_grid()
        auto_loss = population_loss(model, grid, TAU, by_hand=False)()
        step = population_loss(model, grid, TAU, by_hand=True)
    auto_loss.sum().backward()
    auto = _grads(model)
    hand_loss = step()
    return (auto_loss.detach(), hand_loss), (auto, step.weights.stacked_grads())


@pytest.mark.parametrize("objective", ["samples", "population"])
@pytest.mark.parametrize("learn", [True, False])
@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
@pytest.mark.parametrize(("d_in", "dim"), [(1, 2), (16, 8)])
def test_the_hand_written_cosine_step_is_autograds_step_to_rounding(
    objective, learn, seeds, d_in, dim
):
    """Both objectives, log c learnt or fixed: the loss to float32 rounding, each tower's
    gradient and log c's within GRAD_RTOL of autograd's (F.normalize, ·√c on each side)."""
    if objective == "population" and d_in > 1:
        d_in = 1  # the mixture's grid is one-dimensional
    model = build_model(seeds, d_in, d_in, dim, COSINE | {"cosine_scale_learnable": learn})
    x, y = _batch(seeds, d_in)
    (auto_loss, hand_loss), (auto, hand) = _cosine_steps(model, objective, x, y)
    torch.testing.assert_close(hand_loss, auto_loss, rtol=1e-6, atol=1e-7)
    assert len(hand) == len(auto) == 12 + learn
    if learn:  # model.parameters(): log c first
        (a, *auto), (h, *hand) = auto, hand
        assert a.shape == h.shape == (len(seeds),)
        assert float((a - h).norm() / a.norm()) < GRAD_RTOL
    assert max(_tower_gaps(model, auto, hand)) < GRAD_RTOL


def test_validation_of_the_cosine_score_is_the_steps_forward():
    from crl_approx.training.manual import ReplicaWeights, in_batch_losses

    model = build_model([0, 1, 2], 3, 3, 4, COSINE).requires_grad_(False)
    x, y = _batch([0, 1, 2], 3)
    val = block_losses(model, x, y, TAU, 32)
    assert torch.equal(val, _halves(in_batch_losses, ReplicaWeights(model), x, y))
    torch.testing.assert_close(val, _halves(in_batch_loss, model, x, y))  # autograd's
    # the scale enters: validation at another c is another loss
    model.log_scale += 0.5
    assert not torch.allclose(block_losses(model, x, y, TAU, 32), val)


@pytest.mark.parametrize("objective", ["samples", "population"])
def test_at_d1_the_cosine_score_gives_the_towers_no_gradient(objective):
    """Closed form: at D = 1 every unit vector is ±1, so S = ±c and no tower weight moves the
    loss (almost everywhere): the hand-written gradient is exactly zero (∂u − u⟨u, ∂u⟩ = 0 for
    u = ±1), autograd's is rounding noise, while log c's is neither, and both agree on it."""
    model = build_model([0, 1, 2], 1, 1, 1, COSINE)
    x, y = _batch([0, 1, 2], 1)
    _, ((a_c, *auto), (h_c, *hand)) = _cosine_steps(model, objective, x, y)
    assert all(torch.count_nonzero(g) == 0 for g in hand)
    assert max(float(g.abs().max()) for g in auto) < 1e-5 * float(a_c.abs().max())
    # (a replica whose f or g keeps one sign on the data has S ≡ ±c everywhere: no gradient)
    assert float(a_c.abs().max()) > 1.0
    torch.testing.assert_close(h_c, a_c, rtol=1e-5, atol=1e-6)


def test_a_dropped_projection_in_the_normalisation_is_far_outside_the_tolerance(monkeypatch):
    """The tolerance can fail: differentiating f/|f| as if |f| were constant (∂u/|f|, without
    − u⟨u, ∂u⟩) is off by a gap the test sees, in both towers."""
    from crl_approx.training import manual

    model = build_model([0], 1, 1, 4, COSINE)
    x, y = _batch([0], 1)
    in_batch_loss(model, x, y, TAU).sum().backward()
    _, *auto = _grads(model)
    monkeypatch.setattr(manual, "_unit_backward", lambda unit, grad_u: grad_u / unit[1])
    step = batch_loss(model, iter([(x, y)]), TAU, by_hand=True)
    step()
    _, *hand = step.weights.stacked_grads()
    assert min(_tower_gaps(model, auto, hand)) > 0.1


@pytest.mark.parametrize("learn", [True, False])
def test_cosine_training_by_hand_follows_autograds_training(learn):
    """25 AdamW steps of the cosine score (D = 2): the loss curves agree to 1e-4, the learnt
    scale (written back into the model's log_scale) to 1e-4, and it moved; a fixed scale stays."""
    train = COSINE | {"cosine_scale_learnable": learn}
    runs = []
    for by_hand in (False, True):
        torch.manual_seed(0)
        seeds = [0, 1, 2]
        x, y = _batch(seeds, 1, 8 * 64)
        model = build_model(seeds, 1, 1, 2, train)
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        step = batch_loss(model, pool_batches(x, y, gens, 64), TAU, by_hand=by_hand)
        opt = make_optimizer(getattr(step, "weights", model), train, 25)
        losses = torch.stack([run_steps(model, opt, step, 1) for _ in range(25)])
        runs.append((losses, model.log_scale.detach().clone()))
    (auto_losses, auto_c), (hand_losses, hand_c) = runs
    torch.testing.assert_close(hand_losses, auto_losses, rtol=1e-4, atol=0)
    assert hand_losses[-1].sum() < hand_losses[0].sum()
    torch.testing.assert_close(hand_c, auto_c, rtol=1e-4, atol=1e-6)
    start = torch.full((3,), math.log(1.7))
    assert torch.equal(hand_c, start) is not learn


def test_replica_weights_write_back_the_learnt_scale_per_replica():
    """Known answer: replica 1's own log c lands at the model's log_scale[1], nothing else."""
    from crl_approx.training.manual import ReplicaWeights

    model = build_model([0, 1, 2], 1, 1, 2, COSINE).requires_grad_(False)
    weights = ReplicaWeights(model)
    assert len(weights.tensors) == 3 * 13 and weights.tensors[12] is weights.scales[0]
    weights.scales[1][0] = 0.25
    weights.write_back()
    assert model.log_scale.tolist() == pytest.approx([math.log(1.7), 0.25, math.log(1.7)])
    fixed = build_model([0], 1, 1, 2, COSINE | {"cosine_scale_learnable": False})
    assert len(ReplicaWeights(fixed).tensors) == 12  # a fixed scale is not the optimiser's


def test_the_unit_sphere_is_f_normalizes_at_and_around_its_clamp():
    """Known answer, a second method: F.normalize divides by the norm clamped at 1e-12 and its
    backward drops the norm's derivative where the clamp took over. Columns of norm 0, 5e-13, one
    float below float32's 1e-12, exactly it, one above, and 1: u and the input's gradient are
    bitwise autograd's. Each column is (a, 0), so every norm, quotient and product here is exact
    in IEEE arithmetic: the two formulas (ours, autograd's chain through the clamp) agree bitwise
    on any host, not by this host's kernels."""
    import torch.nn.functional as F

    from crl_approx.training.manual import _unit, _unit_backward

    eps = torch.tensor(1e-12, dtype=torch.float32)
    norms = [0.0, 5e-13, float(torch.nextafter(eps, torch.tensor(0.0))), float(eps)]
    norms += [float(torch.nextafter(eps, torch.tensor(1.0))), 1.0]
    t = torch.zeros(2, len(norms))
    t[0] = torch.tensor(norms)  # (D = 2, n): column k has norm norms[k]
    grad_u = torch.randn(2, len(norms), generator=torch.Generator().manual_seed(3))
    leaf = t.clone().requires_grad_(True)
    auto_u = F.normalize(leaf, dim=0)
    auto_u.backward(grad_u)
    unit = _unit(t)
    assert torch.equal(unit[0], auto_u.detach())
    assert unit[2].tolist() == [[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]]  # the clamp took over below eps
    assert torch.equal(_unit_backward(unit, grad_u), leaf.grad)


@pytest.mark.parametrize("objective", ["samples", "population"])
def test_a_tower_whose_outputs_fall_below_the_clamp_steps_as_autograd_steps(objective):
    """Replica 1's f outputs norms below 1e-12 everywhere (its last weight zero, its last bias
    5e-13 long): its gradient is the clamped branch's, ~1e12 times larger than the others', and
    still within GRAD_RTOL of autograd's; dropping the clamp's mask would put it off by a tenth."""
    model = build_model([0, 1, 2], 1, 1, 2, COSINE)
    with torch.no_grad():
        model.f[-2][1].zero_()
        model.f[-1][1] = torch.tensor([[3e-13, 4e-13]])
    x, y = _batch([0, 1, 2], 1)
    (auto_loss, hand_loss), ((a_c, *auto), (h_c, *hand)) = _cosine_steps(model, objective, x, y)
    torch.testing.assert_close(hand_loss, auto_loss, rtol=1e-6, atol=1e-7)
    assert float((a_c - h_c).norm() / a_c.norm()) < GRAD_RTOL
    gaps = _tower_gaps(model, auto, hand)
    assert max(gaps) < GRAD_RTOL
    n_f = len(model.f)  # f's last weight, replica 1 against replica 0: the clamped branch ran
    assert float(auto[n_f - 2][1].norm()) > 1e6 * float(auto[n_f - 2][0].norm())


def test_pool_batches_are_each_replicas_own_permutation_cut_into_batches():
    """A known answer for the batch layout (training/batches.py): element [k, r, i] of the
    batches is x[r, perm_r[k·batch + i]], with replica r's permutation from its own generator;
    the pairs left over after the last full batch are dropped, and y follows x's rows."""
    from crl_approx.training.batches import as_batches, epoch_permutations

    r, n, d, batch = 3, 23, 4, 5
    x = torch.arange(r * n * d, dtype=torch.float32).reshape(r, n, d)
    perms = torch.stack(
        [torch.randperm(n, generator=torch.Generator().manual_seed(s)) for s in (7, 8, 9)]
    )
    out = as_batches(x, perms, batch)
    assert out.shape == (n // batch, r, batch, d) and out.is_contiguous()
    for k in range(n // batch):
        for q in range(r):
            for i in range(batch):
                assert torch.equal(out[k, q, i], x[q, perms[q, k * batch + i]])
    gens = [torch.Generator().manual_seed(s) for s in (7, 8, 9)]
    assert torch.equal(epoch_permutations(gens, n, "cpu"), perms)
    first = next(pool_batches(x, -x, [torch.Generator().manual_seed(s) for s in (7, 8, 9)], batch))
    assert torch.equal(first[0], out[0]) and torch.equal(first[1], -out[0])
