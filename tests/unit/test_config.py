"""Config validation: every bad config is rejected with a message naming the key."""

import copy
from pathlib import Path

import pytest
import yaml

from bad_configs import BAD_CONFIGS, deep_merge
from crl_approx.config import ConfigError, validate_config

REPO = Path(__file__).resolve().parents[2]


def test_default_config_is_valid_and_holds_the_paper_setting(default_config, schema):
    cfg = validate_config(default_config, schema)
    assert cfg["tau"] == 0.5
    gmm = cfg["gmm"]
    assert (gmm["mu_x"], gmm["sigma_x"], gmm["mu_y"], gmm["sigma_y"]) == (1.2, 1.0, 1.2, 1.0)
    assert gmm["dims"] == [1, 2, 4, 8]
    assert len(cfg["seeds"]) >= 3


@pytest.mark.parametrize("name", ["smoke.yaml"])
def test_shipped_override_configs_are_valid(default_config, schema, name):
    with open(REPO / "config" / name) as fh:
        validate_config(deep_merge(default_config, yaml.safe_load(fh)), schema)


def test_defaults_are_filled_in(default_config, schema):
    cfg = copy.deepcopy(default_config)
    del cfg["gmm"]["prior"], cfg["gmm"]["convergence_nodes"], cfg["gmm"]["n_eigenvalues"]
    out = validate_config(cfg, schema)
    assert out["gmm"]["prior"] == 0.5
    assert out["gmm"]["convergence_nodes"] == 100
    assert out["gmm"]["n_eigenvalues"] == 32
    assert "prior" not in cfg["gmm"]  # the input is not modified


def test_every_schema_property_is_documented(schema):
    def walk(node, path):
        for name, sub in node.get("properties", {}).items():
            assert sub.get("description"), f"{'.'.join([*path, name])} has no description"
            walk(sub, [*path, name])

    walk(schema, [])


@pytest.mark.parametrize(("name", "override", "key"), BAD_CONFIGS, ids=[b[0] for b in BAD_CONFIGS])
def test_bad_config_is_rejected_naming_the_key(default_config, schema, name, override, key):
    with pytest.raises(ConfigError) as info:
        validate_config(deep_merge(default_config, override), schema)
    msg = str(info.value)
    assert f"config key '{key}'" in msg
    assert "allowed" in msg


def test_missing_required_key_is_named(default_config, schema):
    cfg = copy.deepcopy(default_config)
    del cfg["gmm"]["mu_x"]
    with pytest.raises(ConfigError, match=r"config key 'gmm\.mu_x': required but missing"):
        validate_config(cfg, schema)


def test_misspelling_suggests_the_right_key(default_config, schema):
    with pytest.raises(ConfigError, match=r"did you mean 'gmm\.sigma_x'\?"):
        validate_config(deep_merge(default_config, {"gmm": {"sigmax": 1.0}}), schema)


def test_all_problems_are_reported_at_once(default_config, schema):
    bad = deep_merge(default_config, {"tau": -1, "gmm": {"sigma_x": -1, "dims": []}})
    with pytest.raises(ConfigError) as info:
        validate_config(bad, schema)
    for key in ("tau", "gmm.sigma_x", "gmm.dims"):
        assert f"config key '{key}'" in str(info.value)
