"""The compiled training steps (crl_approx.training.native, native_step.cpp) against their Python
twins in crl_approx.training.manual, which tests/unit/test_manual_step.py ties to autograd: the
same model and data trained for a few AdamW steps each way, on every path (the sampled step, its
validation loss, the population step; the inner score and the cosine score with log c learnt or
fixed; one and three stacked seeds), give bitwise equal losses and weights. A replica's numbers do
not depend on the replicas beside it in the compiled step either (three seeds stacked, each bitwise
its own run). A build that fails, and a lock file left by a killed build, leave the Python step,
with the same numbers, and never a hang."""

import fcntl
import hashlib
import logging
import os
import subprocess
import sys
import time

import pytest
import torch

from conftest import REPO, STEP_TAU, STEP_TRAIN, mixture_grid
from crl_approx.runtime import STEP_LINE
from crl_approx.training import native
from crl_approx.training.batches import pool_batches
from crl_approx.training.loops import block_losses, make_optimizer, run_steps
from crl_approx.training.manual import (
    PopulationConstants,
    ReplicaWeights,
    in_batch_losses,
    in_batch_step,
    population_step,
)
from crl_approx.training.towers import build_model

TAU, TRAIN = STEP_TAU, STEP_TRAIN
SCORES = {
    "inner": {},
    "cosine_learnt": {"score": "cosine"},
    "cosine_fixed": {"score": "cosine", "cosine_scale_learnable": False},
}


def _train(objective, score, seeds, d_in, dim, compiled: bool, steps=12, depth=3):
    """``steps`` AdamW steps of the hand-written step, compiled or Python: (the losses per step,
    the validation losses, the sha256 of the final weights, the model)."""
    train = TRAIN | SCORES[score] | {"depth": depth}
    model = build_model(seeds, d_in, d_in, dim, train)
    weights = ReplicaWeights(model, compiled=compiled)
    assert (weights.native is not None) == compiled
    if objective == "samples":
        # each seed's pairs from its own generator (a replica alone sees the same pairs)
        gens = [torch.Generator().manual_seed(100 + s) for s in seeds]
        x = torch.stack([torch.randn(8 * 64, d_in, generator=g) for g in gens])
        y = x + 0.5 * torch.stack([torch.randn(8 * 64, d_in, generator=g) for g in gens])
        batches = pool_batches(x, y, [torch.Generator().manual_seed(s) for s in seeds], 64)

        def step():
            return in_batch_step(weights, *next(batches), TAU)

    else:
        grid = mixture_grid()
        gx, gy = (g.expand(len(seeds), *g.shape).contiguous() for g in (grid.x, grid.y))
        consts = PopulationConstants(grid, gx, gy, TAU)

        def step():
            return population_step(weights, consts, TAU)

    step.weights = weights
    opt = make_optimizer(weights, train, steps)
    losses = torch.stack([run_steps(model, opt, step, 1) for _ in range(steps)])
    val = None
    if objective == "samples":
        val = block_losses(model, x[:, :128], y[:, :128], TAU, 64, weights)
        one = in_batch_losses(weights, x[:, :64], y[:, :64], TAU)
        val = torch.cat([val, one])
    return losses, val, _digest(model), model


def _digest(model) -> str:
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
    return digest.hexdigest()


#: (objective, d_in, D, depth): the mixture's grid is one-dimensional; depth 2 is one hidden layer
SHAPES = [
    ("samples", 1, 2, 3),
    ("samples", 16, 8, 3),
    ("samples", 3, 1, 3),
    ("samples", 3, 4, 2),
    ("population", 1, 2, 3),
    ("population", 1, 1, 3),
    ("population", 1, 8, 3),
    ("population", 1, 4, 2),
]


@pytest.mark.parametrize(("objective", "d_in", "dim", "depth"), SHAPES)
@pytest.mark.parametrize("score", list(SCORES))
@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
def test_the_compiled_step_trains_bitwise_as_the_python_step(
    compiled, objective, score, seeds, d_in, dim, depth
):
    py = _train(objective, score, seeds, d_in, dim, compiled=False, depth=depth)
    cc = _train(objective, score, seeds, d_in, dim, compiled=True, depth=depth)
    assert torch.equal(cc[0], py[0])
    if objective == "samples":
        assert torch.equal(cc[1], py[1])
    assert cc[2] == py[2]
    # the weights moved (at D = 1 the cosine score's loss does not: only weight decay moves them)
    fresh = build_model(seeds, d_in, d_in, dim, TRAIN | SCORES[score] | {"depth": depth})
    assert py[2] != _digest(fresh)


@pytest.mark.parametrize("use_compiled", [True, False])
@pytest.mark.parametrize("objective", ["samples", "population"])
@pytest.mark.parametrize("score", ["inner", "cosine_learnt"])
def test_a_replica_is_bitwise_its_own_run_in_either_step(compiled, use_compiled, objective, score):
    """Three seeds stacked: each replica's losses and weights are bitwise its run alone."""
    stacked, _, _, model = _train(objective, score, [0, 1, 2], 1, 2, compiled=use_compiled)
    for r, seed in enumerate([0, 1, 2]):
        alone, _, _, one = _train(objective, score, [seed], 1, 2, compiled=use_compiled)
        assert torch.equal(stacked[:, r], alone[:, 0])
        for p, q in zip(model.parameters(), one.parameters(), strict=True):
            assert torch.equal(p.detach()[r], q.detach()[0])


def test_a_rounding_change_in_the_python_step_shows(compiled, monkeypatch):
    """The comparison resolves one rounding: the Python step with its softmax taken as
    exp(S − logsumexp S) (the same P to rounding) no longer trains bitwise as the compiled step."""
    from crl_approx.training import manual

    cc = _train("samples", "inner", [0], 1, 2, compiled=True)
    assert _train("samples", "inner", [0], 1, 2, compiled=False)[2] == cc[2]

    def info_nce(logits, tau):
        lse = torch.logsumexp(logits, 1, keepdim=True)
        loss = tau * (lse[:, 0] - logits.diagonal()).mean(0, keepdim=True)
        return loss, torch.exp(logits - lse)

    monkeypatch.setattr(manual, "_info_nce", info_nce)
    off = _train("samples", "inner", [0], 1, 2, compiled=False)
    assert off[2] != cc[2]
    torch.testing.assert_close(off[0], cc[0], rtol=1e-5, atol=0)  # the same function


def test_the_jobs_take_the_compiled_step_unless_told_not_to(compiled, monkeypatch, caplog):
    model = build_model([0], 1, 1, 2, TRAIN)
    native._say.cache_clear()
    with caplog.at_level(logging.INFO, logger=native.__name__):
        assert ReplicaWeights(model).native.mod is compiled
        monkeypatch.setenv("CRL_NATIVE_STEP", "0")
        assert ReplicaWeights(model).native is None
    said = [r.getMessage() for r in caplog.records]
    step = STEP_LINE.format
    assert said == [step(step="compiled"), step(step="python (CRL_NATIVE_STEP=0)")]


def test_a_failed_build_leaves_the_python_step_with_a_warning(tmp_path, monkeypatch, caplog):
    broken = tmp_path / "native_step.cpp"
    broken.write_text("#error a source that does not compile\n")
    monkeypatch.setattr(native, "SOURCE", broken)
    monkeypatch.setenv("CRL_NATIVE_DIR", str(tmp_path / "cache"))
    native._module.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=native.__name__):
            model = build_model([0], 1, 1, 2, TRAIN)
            assert ReplicaWeights(model).native is None
    finally:
        native._module.cache_clear()
    assert "the Python step runs, with ATen's kernels" in caplog.text
    with pytest.raises(RuntimeError, match="unavailable"):
        monkeypatch.setattr(native, "module", lambda: None)
        ReplicaWeights(model, compiled=True)


def test_a_lock_left_by_a_killed_build_does_not_hang_the_next_job(compiled):
    """torch's build lock file, as a build killed mid-way leaves it (older than STALE_LOCK_S): the
    next job removes it under its own flock and loads (torch alone would wait for it forever)."""
    lock = native.cache_dir() / native.build_key() / "lock"
    lock.write_text("")
    old = lock.stat().st_mtime - native.STALE_LOCK_S - 1
    os.utime(lock, (old, old))
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from crl_approx.training import native; print(native.module() is not None)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "workflow" / "scripts")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert out.stdout.strip() == "True"
    assert not lock.exists()


def test_a_young_lock_is_waited_for_and_a_held_build_lock_times_out(compiled, tmp_path):
    """A lock file younger than STALE_LOCK_S is a build still running: the job waits until it
    goes (here: removed after a second), then loads; a build lock another job holds past the
    wait raises, which the caller turns into the Python step."""
    import threading

    lock = native.cache_dir() / native.build_key() / "lock"
    lock.write_text("")
    threading.Timer(1.0, lock.unlink).start()
    start = time.monotonic()
    assert native._load() is not None
    assert time.monotonic() - start >= 0.9
    held, other = tmp_path / "a", tmp_path / "a"
    with open(held, "w") as first, open(other) as second:
        fcntl.flock(first, fcntl.LOCK_EX)
        with pytest.raises(TimeoutError, match="held the build lock"):
            native._wait_for_lock(second, 0.6)


def test_the_build_command_says_where_the_module_is_or_why_not(compiled):
    script = [sys.executable, "-m", "crl_approx.training.native"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "workflow" / "scripts"))
    ok = subprocess.run(script, capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0
    assert ok.stdout.strip() == f"the compiled training step: {compiled.__file__}"
    env["CRL_NATIVE_STEP"] = "0"
    off = subprocess.run(script, capture_output=True, text=True, env=env, timeout=300)
    assert off.returncode == 1
    assert "unavailable" in off.stdout
