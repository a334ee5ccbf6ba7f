"""Experiment W's cells since issue 36: the LCGM cells train on a fresh stream, so a seed's cell
depends on nothing but the seed (not the seeds beside it, not lcgm.n_train), the fresh stream is
the generalised one of the sample-size study (the mixture's draws unchanged), and a dry run on a
finished set of cells reruns none of them when lcgm.n_train changes, every LCGM cell when
widths.lcgm_steps does."""

import json

import numpy as np
import pytest
import torch

from conftest import REPO, run_snakemake
from crl_approx.analyses.widths_cells import cell_train, heldout_excess
from crl_approx.config import load_schema, reruns, validate_config
from crl_approx.models.data import fresh_blocks, lcgm_pairs
from crl_approx.models.gmm import GaussianMixture
from crl_approx.models.lcgm import LatentClassModel
from crl_approx.models.rng import stream
from crl_approx.training.batches import fresh_batches
from crl_approx.training.cells import train_lcgm

#: an LCGM cell's data params as widths_data_params gives them: the model, the validation and
#: probe-test sizes, never lcgm.n_train
LCGM = {
    "K": 4,
    "d_x": 8,
    "d_y": 8,
    "prior": "uniform",
    "mean_x": 6.0,
    "sigma_x": 0.9,
    "mean_y": 3.5,
    "sigma_y": 1.0,
    "design_seed": 7,
    "n_checkpoint": 8,
    "n_candidates": 64,
    "n_probe_test": 256,
    "n_val": 64,
}
TRAIN = {
    "width": 16,
    "depth": 3,
    "lr": 3e-3,
    "weight_decay": 1e-4,
    "schedule": "cosine",
    "epochs": 2,
    "batch_size": 32,
    "max_loss": 100.0,
}
TAU, STEPS = 0.5, 40
VOLATILE = {"train_seconds"}  # wall-clock fields; everything else must be bitwise identical
MIX = GaussianMixture(mu_x=1.2, sigma_x=1.0, mu_y=1.2, sigma_y=1.0, prior=0.5)


def _strip(metrics):
    out = {k: v for k, v in metrics.items() if k not in VOLATILE}
    out["history"] = [{k: v for k, v in h.items() if k != "seconds"} for h in out["history"]]
    return json.dumps(out, sort_keys=True)


def _cell(seeds, lcgm=LCGM, tower="g", width=4):
    """One LCGM W cell as run_cell trains and scores it: (model, metrics with the held-out
    excess, checkpoints)."""
    pairs = [lcgm_pairs(lcgm, s, splits=("val", "test")) for s in seeds]
    params = cell_train(TRAIN, tower, width)
    model, metrics, ckpts = train_lcgm(
        lcgm, params, TAU, 4, seeds, 1, pairs, steps=STEPS, fresh=True
    )
    for m, h in zip(metrics, heldout_excess(model, lcgm, TAU, pairs), strict=True):
        m.update(h)
    return model, metrics, ckpts


def _same(a, b, r_a, r_b):
    """Replica r_a of cell a and r_b of cell b: bitwise the same metrics, checkpoints, weights."""
    assert _strip(a[1][r_a]) == _strip(b[1][r_b])
    assert set(a[2][r_a]) == set(b[2][r_b])
    for key in a[2][r_a]:
        np.testing.assert_array_equal(a[2][r_a][key], b[2][r_b][key])
    pa, pb = a[0].replica(r_a).parameters(), b[0].replica(r_b).parameters()
    for p, q in zip(pa, pb, strict=True):
        assert torch.equal(p, q)


def test_a_fresh_lcgm_seed_does_not_depend_on_the_seeds_beside_it():
    """Seed 1 of a narrow-g cell trained alone and beside seed 0 (listed after it): bitwise the
    same metrics (the held-out excess included), checkpoints and weights; seed 0 is another
    model. Mutation caught (seen failing): one fresh stream shared by the replicas (seed 1
    beside seed 0 then draws seed 0's batches)."""
    alone = _cell([1])
    both = _cell([0, 1])
    _same(alone, both, 0, 1)
    assert alone[1][0]["objective"] == "fresh" and alone[1][0]["steps"] == STEPS
    assert np.isfinite(alone[1][0]["heldout_excess"])
    assert both[1][0]["heldout_excess"] != both[1][1]["heldout_excess"]
    assert both[0].g[0].shape[-1] == 4 and both[0].f[0].shape[-1] == TRAIN["width"]


def test_the_float32_heldout_score_is_the_float64_one_to_far_below_the_eps_ladder():
    """heldout_excess scores the learned model's blocks in float32 (its cost); the same blocks in
    float64 (block_infonce on embed's float64 features, the LCGM sweep's form) give the same
    excess to 1e-6 per seed, and τ·PMI's part is the float64 one exactly. Mutation caught (seen
    failing): the blocks in float16 (7e-5 off)."""
    from crl_approx.analyses.probes import block_infonce
    from crl_approx.training.towers import embed

    model, metrics, _ = _cell([0, 1])
    pairs = [lcgm_pairs(LCGM, s, splits=("val", "test")) for s in (0, 1)]
    fx, gy = embed(
        model, np.stack([p["x_test"] for p in pairs]), np.stack([p["y_test"] for p in pairs])
    )
    block = LCGM["n_candidates"]
    for r, (m, p) in enumerate(zip(metrics, pairs, strict=True)):
        n = p["x_test"].shape[0]
        assert n // block >= 2  # several blocks, as in the default config
        ref = block_infonce(lambda sl, r=r: fx[r][sl] @ gy[r][sl].T, n, TAU, block)
        assert m["heldout_infonce"] != ref  # float32 is a different computation
        assert abs(m["heldout_infonce"] - ref) < 1e-6
        assert m["heldout_excess"] == m["heldout_infonce"] - m["heldout_infonce_bayes"]


def test_a_fresh_lcgm_cell_does_not_read_the_training_pools_size():
    """The cell's data params hold no lcgm.n_train (widths_data_params), and with any n_train
    given the cell is bitwise the same: the fresh stream and the validation and probe-test pairs
    come from the seed's own streams. The validation and probe-test pairs are those of the LCGM
    sweep's pairs of the same sizes (lcgm_pairs with every split). Mutation caught (seen
    failing): training on the pool (fit_pairs: a KeyError on x_train)."""
    plain = _cell([2])
    with_pool = _cell([2], LCGM | {"n_train": 4096, "n_probe_fit": 128})
    _same(plain, with_pool, 0, 0)
    full = lcgm_pairs(LCGM | {"n_train": 4096, "n_probe_fit": 128}, 2)
    part = lcgm_pairs(LCGM, 2, splits=("val", "test"))
    assert set(part) == {f"{v}_{s}" for v in "xyz" for s in ("val", "test")}
    for key, value in part.items():
        np.testing.assert_array_equal(value, full[key])


def test_the_fresh_stream_is_the_models_own_draws_in_blocks():
    """fresh_blocks on the mixture (1-D pairs) gives blocks (chunk, batch) equal to mix.sample
    of chunk·batch pairs from the seed's stream 5, block after block from one generator (the
    sample-size study's stream, unchanged by the generalisation); on the LCGM blocks (chunk,
    batch, d), pair j of row i being draw i·batch + j; fresh_batches stacks the seeds as
    (R, batch, d) and a seed's batches do not depend on the seeds beside it. Mutations caught (seen
    failing): the training stream for the fresh one, a reshape that reorders the pairs, the
    mixture's extra axis added to the LCGM's batches."""
    chunk, batch = 4, 16
    gen = fresh_blocks(MIX, 3, batch, chunk=chunk)
    rng = stream(3, 5)
    for _ in range(2):
        x, y = next(gen)
        x0, y0, _ = MIX.sample(chunk * batch, rng)
        assert x.shape == y.shape == (chunk, batch)
        np.testing.assert_array_equal(x, x0.reshape(chunk, batch))
        np.testing.assert_array_equal(y, y0.reshape(chunk, batch))
    model = LatentClassModel.from_config(LCGM)
    x, y = next(fresh_blocks(model, 3, batch, chunk=chunk))
    x0, y0, _ = model.sample(chunk * batch, stream(3, 5))
    assert x.shape == (chunk, batch, 8) and y.shape == (chunk, batch, 8)
    np.testing.assert_array_equal(x[1, 2], x0[1 * batch + 2])
    np.testing.assert_array_equal(y[3, 15], y0[3 * batch + 15])
    together = [next(g) for g in [fresh_batches(model, [0, 1], batch, torch.float32, "cpu")] * 5]
    alone = [next(g) for g in [fresh_batches(model, [1], batch, torch.float32, "cpu")] * 5]
    for (x2, y2), (x1, y1) in zip(together, alone, strict=True):
        assert x2.shape == (2, batch, 8)
        torch.testing.assert_close(x2[1], x1[0], rtol=0, atol=0)
        torch.testing.assert_close(y2[1], y1[0], rtol=0, atol=0)
    first = next(fresh_batches(MIX, [0, 1], batch, torch.float32, "cpu"))[0]
    assert first.shape == (2, batch, 1)


SMOKE = str(REPO / "config" / "smoke.yaml")
#: Experiment W's training rules: the towers' sweeps on the LCGM worlds and the mixture, the
#: LCGM worlds' widest cells
TRAIN_RULES = ("train_widths", "train_widths_gmm", "train_widths_widest")
SCHEMA = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")


@pytest.fixture(scope="module")
def finished_cells(tmp_path_factory):
    """A folder holding every job of Experiment W's training rules of the smoke config as
    finished: Snakemake's
    records of its params (--touch writes them as a run would, and touches no missing file), then
    its outputs (empty files)."""
    run = tmp_path_factory.mktemp("widths-cells")
    until = ("--configfile", SMOKE, "--until", *TRAIN_RULES)
    proc = run_snakemake(run, "--touch", "--cores", "1", *until, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outputs = {
        name.strip()
        for line in (proc.stdout + proc.stderr).splitlines()
        if line.strip().startswith("output: results/widths/")
        for name in line.split("output:", 1)[1].split(",")
    }
    assert len(outputs) == 9 * 3  # the smoke config's 9 cells, one seed, 3 files each
    for name in outputs:
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).touch()
    return run


def _planned_cells(run, override) -> list[str]:
    """The reasons of the W training jobs a change of the smoke config plans on ``run``
    (crl_approx.config.reruns's dry run, the rerun survey's)."""
    rc, out = reruns.dry_run(run, override)
    assert rc == 0, out[-3000:]
    return [kind for rule, kind in reruns.planned_jobs(out) if rule in TRAIN_RULES]


def test_the_lcgm_pool_size_reruns_no_width_cell(finished_cells):
    """On a finished set of cells nothing reruns unchanged, and a changed lcgm.n_train (the
    survey's own change of the key) plans no train_widths job: no cell reads the LCGM's pool or
    a param derived from it. A changed widths.lcgm_steps does plan every LCGM cell (both LCGM
    worlds' three, the 2x cell: 7), for its params, and none of the mixture's two. Mutations
    caught (seen failing): lcgm.n_train in the cells' data params (7 params reruns), the LCGM's
    pairs as an input (its cells rerun behind make_dataset), widths_steps ignoring
    widths.lcgm_steps (nothing planned)."""
    config = validate_config(reruns.merged(reruns.SMOKE), SCHEMA, memory=64 << 30)
    assert _planned_cells(finished_cells, {}) == []
    n_train = reruns.perturbation(config, SCHEMA, ("lcgm", "n_train"))
    assert n_train["lcgm"]["n_train"] != config["lcgm"]["n_train"]
    assert _planned_cells(finished_cells, n_train) == []
    steps = reruns.perturbation(config, SCHEMA, ("widths", "lcgm_steps"))
    assert _planned_cells(finished_cells, steps) == ["params"] * 7


@pytest.mark.parametrize("tau", [0.5, 0.2])
def test_the_bayes_heldout_infonce_in_closed_form_is_the_matrix_computation(tau):
    """τ·PMI's block InfoNCE from K-dimensional posteriors (widths_cells.bayes_block_infonce)
    equals the probe rule's n × n computation (probes.block_infonce on τ·PMI) on the same
    pairs, blocks and τ: a second method, not the first against itself. Seen failing with the
    log-ratio's logsumexp over the wrong axis and without the diagonal's τ."""
    from crl_approx.analyses.probes import block_infonce
    from crl_approx.analyses.widths_cells import bayes_block_infonce
    from crl_approx.models.data import lcgm_pairs
    from crl_approx.models.lcgm import LatentClassModel

    lcgm = {
        "K": 4, "d_x": 8, "d_y": 8, "prior": "uniform", "mean_x": 6.0, "sigma_x": 0.9,
        "mean_y": 3.5, "sigma_y": 1.0, "design_seed": 2610, "n_probe_test": 1100,
    }  # fmt: skip
    t = lcgm_pairs(lcgm, 3, splits=("test",))
    truth = LatentClassModel.from_config(lcgm)
    x, y = t["x_test"], t["y_test"]
    matrix = block_infonce(lambda sl: tau * truth.pmi(x[sl], y[sl]), len(x), tau, 256)
    closed = bayes_block_infonce(truth, x, y, tau, 256)
    assert closed == pytest.approx(matrix, rel=1e-10, abs=1e-12)
    assert closed < 0  # the exact score beats the uninformative one (loss 0) on 4 classes


def _sweep_outputs(root, widths, seeds, tower):
    """A sweep job's output lists as Snakemake passes them (width-major, seed-minor)."""
    from types import SimpleNamespace

    def files(name):
        return [
            str(root / f"tower~{tower}/width~{w}/budget~1x/seed~{s}/{name}")
            for w in widths
            for s in seeds
        ]

    return SimpleNamespace(
        model=files("model.pt"), metrics=files("metrics.json"), checkpoints=files("checkpoints.npz")
    )


GMM = {"mu_x": 1.2, "sigma_x": 1.0, "mu_y": 1.2, "sigma_y": 1.0, "prior": 0.5}
GMM |= {"quadrature_nodes": 60}
POPULATION = TRAIN | {"population_nodes": 16, "population_steps": 30}


@pytest.mark.parametrize("world", ["lcgm", "gmm"])
def test_a_sweep_job_writes_each_width_as_a_job_of_that_width_alone(tmp_path, world):
    """run_sweep trains widths 1 then 12 of tower g in one process (the rules' one job per
    sweep since 1.12.0): width 12's files, metrics (the excess included), checkpoints and
    weights, are bitwise those of run_cell on width 12 alone drawing its own pairs (the
    per-cell job before 1.12.0), and width 1's are another model's; each width's files are
    found by their folders ("width~1" is a prefix of "width~12"), whatever their order in the
    job's list. Mutations caught (seen failing): each width's files taken in the list's order
    (both worlds), the folder matched without its trailing slash, the LCGM's probe-test pairs
    shared by the widths and altered by the first."""
    from crl_approx.analyses.widths_cells import run_cell, run_sweep
    from crl_approx.integrity import load_npz, load_torch

    seeds = [0, 1]
    if world == "lcgm":
        kw = {"data": LCGM, "train": TRAIN, "dim": 4, "objective": "fresh", "steps": STEPS}
    else:
        kw = {"data": GMM, "train": POPULATION, "dim": 2, "objective": "population"}
    kw |= {"tau": TAU, "threads": 1, "pairs_paths": []}
    both, alone = tmp_path / "both", tmp_path / "alone"
    out = _sweep_outputs(both, [1, 12], seeds, "g")
    out.model.reverse()  # positions carry no meaning: the folders do
    run_sweep(world, seeds=seeds, tower="g", widths=[1, 12], budget="1x", output=out, **kw)
    cell = {"tower": "g", "width": 12, "budget": "1x"}
    run_cell(world, seeds=seeds, cell=cell, output=_sweep_outputs(alone, [12], seeds, "g"), **kw)
    key = "heldout_excess" if world == "lcgm" else "mlp_excess_risk"
    for s in seeds:
        cell = f"tower~g/width~12/budget~1x/seed~{s}"
        a, b = (json.loads((r / cell / "metrics.json").read_text()) for r in (both, alone))
        a, b = ({k: v for k, v in m.items() if k != "__provenance__"} for m in (a, b))
        assert _strip(a) == _strip(b) and a["width"] == 12 and np.isfinite(a[key])
        ca, cb = (load_npz(r / cell / "checkpoints.npz") for r in (both, alone))
        assert set(ca) == set(cb)
        for k in ca:
            np.testing.assert_array_equal(ca[k], cb[k])
        wa, wb = (load_torch(r / cell / "model.pt")["state_dict"] for r in (both, alone))
        assert set(wa) == set(wb) and all(torch.equal(wa[k], wb[k]) for k in wa)
        narrow = json.loads((both / f"tower~g/width~1/budget~1x/seed~{s}/metrics.json").read_text())
        assert narrow["width"] == 1 and narrow[key] != a[key]
