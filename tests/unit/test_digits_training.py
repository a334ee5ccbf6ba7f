"""Experiment R's training path (crl_approx.training.digits.run, rule train_digits): a seed's
numbers do not depend on the seeds stacked beside it, on both pairings (class pairs, image
halves): seed 1 alone and listed after seed 0 give bitwise the same checkpoints and, but for the
wall-clock fields, the same metrics; seed 0 is another model."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import REPO
from crl_approx.config.reruns import merged
from crl_approx.models import digits as digits_data
from crl_approx.training import digits


def config() -> dict:
    base = merged(REPO / "config" / "smoke.yaml")
    d = base["digits"] | {"steps": 12, "halves_steps": 12, "checkpoints": 2}
    train = {k: base["train"][k] for k in ("width", "depth", "weight_decay", "max_loss")}
    return d, {"score": "inner", "lr": d["lr"], "schedule": d["schedule"]} | train


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d, _ = config()
    path = tmp_path_factory.mktemp("digits") / "images.npz"
    digits_data.run(d, SimpleNamespace(images=path))
    return path


def trained(tmp_path, images, pairing, dim, seeds):
    d, train = config()
    folder = tmp_path / "-".join(map(str, seeds))
    folder.mkdir()
    out = SimpleNamespace(
        metrics=[folder / f"{s}.json" for s in seeds],
        checkpoints=[folder / f"{s}.npz" for s in seeds],
    )
    digits.run(d, train, 0.5, pairing, dim, seeds, 1, images, out, device="cpu")
    metrics = [json.loads(p.read_text()) for p in out.metrics]
    for m in metrics:
        m.pop("train_seconds", None)
        m.pop("__provenance__")  # names its own file
        for h in m.get("history", []):
            h.pop("seconds", None)
    return metrics, [dict(np.load(p)) for p in out.checkpoints]


@pytest.mark.parametrize(("pairing", "dim"), [("K2", 2), ("halves", 2)])
def test_a_digits_seed_does_not_depend_on_the_seeds_beside_it(tmp_path, images, pairing, dim):
    (m_alone,), (c_alone,) = trained(tmp_path, images, pairing, dim, [1])
    (m0, m1), (c0, c1) = trained(tmp_path, images, pairing, dim, [0, 1])
    assert m_alone == m1 and m0["seed"] == 0
    assert c_alone.keys() == c1.keys() and {"f", "g", "step"} <= c1.keys()
    for key in c1.keys() - {"__provenance__"}:  # the record names its own file
        np.testing.assert_array_equal(c_alone[key], c1[key], err_msg=key)
    assert not np.array_equal(c0["f"], c1["f"])  # the other seed is another model
