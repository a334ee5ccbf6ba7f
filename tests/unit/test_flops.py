"""The training loops count their matmul work (crl_approx.runtime.count_flops), which the run
record sets against the host's peak: a known answer for the towers' FLOPs, written out from the
architecture (not from the code), and a training job's count against its steps and validation
blocks, on the sampled and the population objective."""

import pytest

from crl_approx import runtime
from crl_approx.models.data import gmm_pairs
from crl_approx.render.runrecord import job_flops
from crl_approx.training.cells import train_gmm
from crl_approx.training.towers import StackedTwoTower

GMM = {
    "mu_x": 1.2,
    "sigma_x": 1.0,
    "mu_y": 1.2,
    "sigma_y": 1.0,
    "prior": 0.5,
    "quadrature_nodes": 40,
    "n_train": 2048,
    "n_val": 600,  # two full validation blocks of 256 and a remainder that is not scored
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
    "population_steps": 61,
    "max_loss": 100.0,
}


def test_forward_flops_of_known_towers():
    # f: 5 -> 4 -> 4 -> 3 (depth 3, width 4), g: 7 -> 8 -> 8 -> 3 (width 8), D = 3, two replicas;
    # a matmul of (n, a) by (a, b) is 2·n·a·b FLOPs; 10 queries, 6 candidates
    model = StackedTwoTower([0, 1], 5, 7, 3, (4, 8), 3)
    f = 2 * 10 * (5 * 4 + 4 * 4 + 4 * 3)  # 960
    g = 2 * 6 * (7 * 8 + 8 * 8 + 8 * 3)  # 1728
    score = 2 * 10 * 6 * 3  # 360
    assert model.forward_flops(10, 6) == 2 * (f + g + score) == 6096
    # the towers swapped: the widths follow the towers, not the argument order
    assert model.forward_flops(6, 10) == 2 * (
        2 * 6 * (5 * 4 + 4 * 4 + 4 * 3) + 2 * 10 * (7 * 8 + 8 * 8 + 8 * 3) + score
    )


def _forward(n):
    """One replica's forward FLOPs at width 16, depth 3, D = 2, scalar x and y, n by n points."""
    tower = 2 * n * (1 * 16 + 16 * 16 + 16 * 2)
    return 2 * tower + 2 * n * n * 2


@pytest.mark.parametrize("objective", ["samples", "population"])
def test_a_training_job_counts_its_steps_and_validation(objective):
    pairs = [gmm_pairs(GMM, seed) for seed in (0, 1, 2)] if objective == "samples" else None
    runtime._flops.clear()
    train_gmm(GMM, TRAIN, 0.5, 2, [0, 1, 2], objective, 1, pairs)
    counted = dict(runtime._flops)
    if objective == "samples":
        steps = 3 * (2048 // 256)  # 3 epochs of 8 batches
        assert counted["steps"] == 3 * steps * 3 * _forward(256)  # 3 seeds, forward + backward
        assert counted["validation"] == 3 * 3 * 2 * _forward(256)  # 3 seeds, 3 epochs, 2 blocks
    else:  # 61 full-batch steps on 12 nodes per component, two components
        assert counted == {"steps": 3 * 61 * 3 * _forward(24), "validation": 0}


def test_the_run_record_reads_the_counts(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "x INFO crl_approx: "
        + runtime.FLOP_LINE.format(name="steps", flop=12345678901234)
        + "\nx INFO crl_approx: "
        + runtime.FLOP_LINE.format(name="validation", flop=7)
        + "\n"
    )
    assert job_flops(log) == {"steps": 12345678901234, "validation": 7}
    assert job_flops(tmp_path / "missing.log") == {}
