"""benchmarks/fused_loss.py: the fused kernels compute the step's in-batch InfoNCE tail (the
loss and both towers' output gradients) to float32 rounding, on the paths a wrong kernel would
get wrong: a large scale (exponentials far below float32's range, clamped), a row whose maximum
is its own pair, D = 1 and a D above the 16 lanes' alignment; and the projection's arithmetic."""

import sys

import pytest
import torch

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import fused_loss


def reference(ft, gt, tau):
    """The tail by autograd in float64: loss = τ·mean(lse(S/τ) − diag(S)/τ), S = fᵀg."""
    f = ft.double().requires_grad_()
    g = gt.double().requires_grad_()
    logits = f.t() @ g / tau
    loss = tau * (torch.logsumexp(logits, 1) - logits.diagonal()).mean()
    loss.backward()
    return loss.detach().reshape(1), f.grad, g.grad


@pytest.mark.slow
@pytest.mark.parametrize(("dim", "batch"), [(1, 64), (2, 16), (8, 64), (17, 48)])
@pytest.mark.parametrize("tau", [0.5, 0.02])
def test_every_tail_is_the_loss_and_its_gradients(dim, batch, tau):
    """Odd D, one vector of 16 lanes (B = 16) and several."""
    mod = fused_loss.build()
    gen = torch.Generator().manual_seed(dim)
    ft, gt = torch.randn(dim, batch, generator=gen), torch.randn(dim, batch, generator=gen)
    gt[:, 5] = 10 * ft[:, 5] / ft[:, 5].norm()  # row 5's largest score is its own pair's
    assert int((ft.t() @ gt)[5].argmax()) == 5
    want = reference(ft, gt, tau)
    for kernel in ("aten_tail", "fused_tail", "partial_tail"):
        got = getattr(mod, kernel)(ft, gt, tau)
        for g, w in zip(got, want, strict=True):
            assert float((g.double() - w).norm() / w.norm()) < 1e-5, kernel
    # the tolerance tells another answer apart: the same towers paired otherwise
    bad = mod.fused_tail(ft, gt.flip(1), tau)
    assert float((bad[2].double() - want[2]).norm() / want[2].norm()) > 1e-2


@pytest.mark.slow
def test_the_fused_kernels_refuse_what_they_cannot_compute():
    mod = fused_loss.build()
    ft = torch.randn(2, 24)  # B not a multiple of the 16 lanes
    for kernel in (mod.fused_tail, mod.partial_tail):
        with pytest.raises(RuntimeError, match="B % 16"):
            kernel(ft, torch.randn(2, 24), 0.5)
    with pytest.raises(RuntimeError, match="both"):
        mod.fused_tail(torch.randn(2, 32), torch.randn(2, 16), 0.5)
    with pytest.raises(RuntimeError, match="float32"):
        mod.fused_tail(torch.randn(2, 32).double(), torch.randn(2, 32).double(), 0.5)


def test_the_projection_takes_each_replicas_saving_off_every_step():
    rows = [{"dim": 2, "aten_us": 400.0, "fused_us": 200.0, "partial_us": 300.0}]
    anatomy = {"cells": [{"cell": "gmm_samples_D2", "step_ms": 5.0, "limit_ms": 3.0,
                          "step_over_limit": 1.67}]}  # fmt: skip
    flop = {
        "cells": [
            {"cell": "gmm_samples_D2", "job_over_limit": 1.8, "job_cpu_s": 18.0,
             "limit_s": 10.0, "steps": 2000,
             "runs": [{"job_cpu_s": 18.0, "limit_s": 10.0}, {"job_cpu_s": 21.2, "limit_s": 10.0}]},
            {"cell": "gmm_fresh_D2", "job_over_limit": 1.7, "job_cpu_s": 17.0,
             "limit_s": 10.0, "steps": 1000},
        ]
    }  # fmt: skip
    a, b = fused_loss.projection(anatomy, flop, rows, replicas=3)
    # 3 replicas × (400 − 200) µs = 0.6 ms a step: (5 − 0.6)/3; (18 − 2000 × 0.0006)/10
    assert (a["cell"], a["saving_ms"], a["projected_step_over_limit"]) == (
        "gmm_samples_D2",
        0.6,
        1.47,
    )
    assert a["projected_job_over_limit"] == 1.68
    assert a["projected_job_range"] == [1.68, 2.0]  # (21.2 − 1.2)/10 for the slower run
    assert b["projected_job_range"] is None  # a record that keeps no runs
    assert (b["cell"], b["step"], b["projected_job_over_limit"]) == (
        "gmm_fresh_D2",
        "gmm_samples_D2",
        1.64,
    )
