"""Intermediate files carry what wrote them; every reader refuses a truncated, swapped or
unrecorded file, naming its path, what differs and how to heal. The readers tested are the ones
the rules call (training's pairs, calibration's and dynamics' metrics + checkpoints, the tables'
metrics, the probes' model)."""

import json
import os
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from crl_approx import integrity
from crl_approx.integrity import IntegrityError
from crl_approx.runtime import atomic_path, job, remove_stale_parts

PAIRS = "results/data/gmm/seed~0/pairs.npz"
POOL = "results/sample_size/data/pool~1024/seed~0/pairs.npz"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Jobs run in the workdir and name their files relative to it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_pairs(path, seed, n, rule="make_dataset", params=None):
    from crl_approx.models.data import gmm_pairs, save_npz

    gmm = {
        "mu_x": 1.0,
        "sigma_x": 0.5,
        "mu_y": 1.0,
        "sigma_y": 0.5,
        "prior": 0.5,
        "n_train": n,
        "n_val": 64,
    }
    wildcards = {"dataset": "gmm", "seed": seed} if rule == "make_dataset" else {"pool": n}
    with job(rule, wildcards | {"seed": seed}, params or {"data": gmm}):
        save_npz(gmm_pairs(gmm, seed), path)


def truncate(path):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def test_a_file_records_the_job_that_wrote_it(workdir):
    write_pairs(PAIRS, 0, 256)
    arrays, rec = integrity.load_npz(PAIRS, with_record=True)
    assert rec["path"] == PAIRS and rec["rule"] == "make_dataset"
    assert rec["wildcards"] == {"dataset": "gmm", "seed": "0"}
    assert rec["shape"]["x_train"] == [[256, 1], "float64"]
    assert integrity.FIELD not in arrays and arrays["x_train"].shape == (256, 1)


# --- the pairs, as training reads them (train_encoder, train_sample_size) -------------------------
def test_training_refuses_truncated_pairs_naming_the_path(workdir):
    """Mutation caught: cells.run back to ``dict(np.load(p))`` (BadZipFile, no path)."""
    from crl_approx.training.cells import run

    write_pairs(PAIRS, 0, 256)
    truncate(PAIRS)
    with pytest.raises(IntegrityError, match=r"seed~0/pairs\.npz: cannot be read") as err:
        run("gmm", {}, {}, 1.0, 1, [0], "samples", 1, [PAIRS], None)
    assert f"--forcerun {PAIRS}" in str(err.value)


def test_a_pool_copied_over_a_seeds_pairs_is_named(workdir):
    """The swap of issue 27: a valid 1024-pair pool over seed 0's pairs. Mutation caught: the
    reader not comparing the recorded path (the pool is then read as the seed's pairs)."""
    write_pairs(PAIRS, 0, 256)
    write_pairs(POOL, 0, 1024, rule="make_pool")
    shutil.copy(POOL, PAIRS)
    with pytest.raises(IntegrityError) as err:
        integrity.load_npz(PAIRS)
    msg = str(err.value)
    assert msg.startswith(PAIRS) and POOL in msg and "rule make_pool" in msg
    assert "--forcerun" in msg and "rule make_pool" in msg


def test_another_seeds_file_is_named(workdir):
    other = "results/data/gmm/seed~1/pairs.npz"
    write_pairs(PAIRS, 0, 256)
    write_pairs(other, 1, 256)
    shutil.copy(other, PAIRS)
    with pytest.raises(IntegrityError, match=r"seed=1"):
        integrity.load_npz(PAIRS)


def test_training_refuses_seeds_drawn_with_other_params(workdir):
    """Seed 1's pairs from a run with another mixture, each file at its own path: training would
    mix two datasets. Mutation caught: load_npz_group without its same_job check."""
    from crl_approx.training.cells import run

    other = "results/data/gmm/seed~1/pairs.npz"
    write_pairs(PAIRS, 0, 256)
    write_pairs(other, 1, 256, params={"data": {"mu_x": 2.0}})
    with pytest.raises(IntegrityError, match=r"seed~1/pairs\.npz: params_sha256 \w+ differs"):
        run("gmm", {}, {}, 1.0, 1, [0, 1], "samples", 1, [PAIRS, other], None)


def test_a_file_without_a_record_is_refused(workdir):
    """Mutation caught: ``check`` accepting a missing record."""
    os.makedirs(os.path.dirname(PAIRS))
    np.savez(PAIRS, x_train=np.zeros((4, 1)))
    with pytest.raises(IntegrityError, match=r"pairs\.npz: carries no provenance"):
        integrity.load_npz(PAIRS)


def test_arrays_other_than_recorded_are_refused(workdir):
    """An array replaced inside a file (its record kept). Mutation caught: no shape check."""
    write_pairs(PAIRS, 0, 256)
    with np.load(PAIRS) as data:
        arrays = dict(data)
    arrays["x_train"] = arrays["x_train"][:100]
    np.savez(PAIRS, **arrays)
    with pytest.raises(IntegrityError, match=r"holds .*\[100, 1\].*its record says"):
        integrity.load_npz(PAIRS)


# --- a run's metrics and checkpoints (measure_calibration, measure_dynamics, assemble_*) ---------
RUN = "results/encoders/gmm/objective~samples/score~inner/dim~1/seed~0"


def write_run(folder, params, dim=1):
    with job("train_encoder", {"dim": dim}, params):
        integrity.save_npz(f"{folder}/checkpoints.npz", {"epoch": np.arange(3)})
        integrity.write_json(f"{folder}/metrics.json", {"D": dim, "seed": 0}, indent=1)


def test_metrics_and_checkpoints_of_another_config_are_named(workdir):
    """A checkpoints.npz of a run with another lr beside the metrics of this run: each file is
    at its own path, only the params differ. Mutation caught: ``same_job`` not comparing the
    params hash (calibration and dynamics would mix two runs)."""
    from crl_approx.analyses.calibration import checkpoint_points

    write_run(RUN, {"lr": 0.01})
    os.makedirs("elsewhere")
    write_run("elsewhere", {"lr": 0.003})
    kept = integrity.load_npz(f"{RUN}/checkpoints.npz")
    with job("train_encoder", {"dim": 1}, {"lr": 0.003}):
        integrity.save_npz(f"{RUN}/checkpoints.npz", kept)
    with pytest.raises(IntegrityError, match=r"checkpoints\.npz: params_sha256 .* differs"):
        checkpoint_points(None, 1.0, 0, 0, f"{RUN}/metrics.json", f"{RUN}/checkpoints.npz")


def test_truncated_checkpoints_are_named_by_calibration(workdir):
    """Mutation caught: calibration back to ``np.load(ckpt_path)`` (BadZipFile, no path)."""
    from crl_approx.analyses.calibration import checkpoint_points

    write_run(RUN, {"lr": 0.01})
    truncate(f"{RUN}/checkpoints.npz")
    with pytest.raises(IntegrityError, match=r"seed~0/checkpoints\.npz: cannot be read"):
        checkpoint_points(None, 1.0, 0, 0, f"{RUN}/metrics.json", f"{RUN}/checkpoints.npz")


def test_truncated_or_swapped_metrics_are_named_by_the_tables(workdir):
    """Mutation caught: tables.load_runs back to ``json.load`` (JSONDecodeError, no path)."""
    from crl_approx.analyses.tables import load_runs

    other = RUN.replace("dim~1", "dim~2")
    write_run(RUN, {"lr": 0.01})
    write_run(other, {"lr": 0.01}, dim=2)
    shutil.copy(f"{other}/metrics.json", f"{RUN}/metrics.json")
    with pytest.raises(IntegrityError, match=r"dim~1/seed~0/metrics\.json: holds .*dim=2"):
        load_runs([f"{RUN}/metrics.json"])
    truncate(f"{other}/metrics.json")
    with pytest.raises(IntegrityError, match=r"dim~2/seed~0/metrics\.json: cannot be read"):
        load_runs([f"{other}/metrics.json"])


# --- model.pt (probe_lcgm) ------------------------------------------------------------------------
def test_model_pt_truncated_or_swapped_is_named(workdir):
    """Mutation caught: towers.load_model back to ``torch.load`` (PytorchStreamReader failed)."""
    from crl_approx.training.towers import build_model, load_model, save_replica

    train = {"width": 8, "depth": 2, "score": "inner"}
    meta = {"dim": 2, "objective": "samples", "train": train, "tau": 1.0, "d_x": 3, "d_y": 3}
    paths = [f"results/encoders/lcgm/dim~2/seed~{s}/model.pt" for s in (0, 1)]
    model = build_model([0, 1], 3, 3, 2, train)
    for r, path in enumerate(paths):
        with job("train_encoder", {"dim": 2}, {"train": train}), atomic_path(path) as tmp:
            save_replica(model, r, meta, tmp, path)
    assert load_model(paths[0]).seeds == [0]
    shutil.copy(paths[1], paths[0])
    with pytest.raises(IntegrityError, match=r"seed~0/model\.pt: holds .*seed~1/model\.pt"):
        load_model(paths[0])
    truncate(paths[1])
    with pytest.raises(IntegrityError, match=r"seed~1/model\.pt: cannot be read"):
        load_model(paths[1])


def test_records_leave_the_numbers_alone(workdir):
    """The record is metadata: the arrays and the JSON values read back are the ones written."""
    arrays = {"a": np.linspace(0, 1, 7), "b": np.arange(3, dtype=np.int32)}
    integrity.save_npz("x.npz", arrays)
    back = integrity.load_npz("x.npz")
    assert all(np.array_equal(back[k], v) and back[k].dtype == v.dtype for k, v in arrays.items())
    integrity.write_json("m.json", {"x": 0.1 + 0.2})
    assert integrity.load_json("m.json") == {"x": 0.1 + 0.2}
    assert json.loads(open("m.json").read())[integrity.FIELD]["rule"] is None  # outside a job


# --- stale temporaries of atomic_path -------------------------------------------------------------
def test_a_stale_part_file_is_removed_on_the_next_write(workdir):
    """A ``.part`` left by a job killed mid-write goes with the next write of the same path; a
    ``.part`` of another path stays. Mutation caught: atomic_path without remove_stale_parts."""
    stale = workdir / ".pairs.npz.ab12cd_9.part"
    other = workdir / ".checkpoints.npz.ab12cd_9.part"
    stale.write_bytes(b"half")
    other.write_bytes(b"half")
    with atomic_path(workdir / "pairs.npz") as tmp:
        tmp.write_text("x")
    assert not stale.exists() and other.exists()
    assert sorted(p.name for p in workdir.iterdir()) == [other.name, "pairs.npz"]
    assert remove_stale_parts(workdir / "checkpoints.npz") == [other]


def test_the_job_record_comes_from_the_rule_shim(workdir):
    """rule_logging declares the job, so a shim's writes record its rule, wildcards and params."""
    from crl_approx.runtime import params_sha256, rule_logging

    smk = SimpleNamespace(
        log=["x.log"],
        rule="make_pool",
        params={"data": {"n_train": 8}},
        wildcards={"pool": "8", "seed": "0"},
        threads=1,
        output=[],
    )
    with rule_logging(smk):
        integrity.write_json("p.json", {"a": 1})
    rec = integrity.load_json("p.json", with_record=True)[1]
    assert rec["rule"] == "make_pool" and rec["wildcards"] == {"pool": "8", "seed": "0"}
    assert rec["params_sha256"] == params_sha256({"data": {"n_train": 8}})
