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


# --- issue 27: integers, the run's estimate and its override, --config lists and mappings -------
def test_integral_floats_of_integer_keys_are_read_as_integers(default_config, schema):
    """4096.0 reached a job as a float (a TypeError there); seeds: [1.0] became the path seed~1.0
    (a MissingInputException). Both are normalised to ints, as if written 4096 and 1."""
    over = {"seeds": [1.0, 2], "gmm": {"n_train": 4096.0}, "lcgm": {"dims": [2.0, 4]}}
    cfg = validate_config(deep_merge(default_config, over), schema)
    assert cfg["seeds"] == [1, 2] and all(type(s) is int for s in cfg["seeds"])
    assert cfg["gmm"]["n_train"] == 4096 and type(cfg["gmm"]["n_train"]) is int
    assert [type(d) for d in cfg["lcgm"]["dims"]] == [int, int]
    assert type(cfg["tau"]) is float  # a number key keeps its float
    with pytest.raises(ConfigError, match=r"config key 'gmm\.n_train'"):
        validate_config(deep_merge(default_config, {"gmm": {"n_train": 4096.5}}), schema)


def test_an_absurd_run_is_refused_with_its_estimate_and_the_override_lets_it_go_on(
    default_config, schema
):
    """gmm.n_train 1e8 is within the schema but plans ~1e18 FLOP (the study's fresh stream alone
    ~1e8 steps per seed): refused naming the key, the estimate and the override."""
    big = deep_merge(default_config, {"gmm": {"n_train": 10**8}})
    with pytest.raises(ConfigError) as info:
        validate_config(big, schema)
    msg = str(info.value)
    assert "config key 'gmm.n_train'" in msg and "FLOP" in msg and "allow_large_run" in msg
    cfg = validate_config(big | {"allow_large_run": True}, schema)
    assert cfg["gmm"]["n_train"] == 10**8
    # the default run is far inside the limit, and the default does not switch the check off
    assert validate_config(default_config, schema)["allow_large_run"] is False


def test_the_largest_array_is_compared_with_the_hosts_memory(default_config, schema):
    """The default config's largest array (~0.4 GiB) fits a 1 GiB host but not a 256 MiB one."""
    validate_config(default_config, schema, memory=2**30)
    with pytest.raises(ConfigError, match=r"GiB, more than this host's 0\.25 GiB"):
        validate_config(default_config, schema, memory=2**28)


def test_the_default_runs_estimate_is_its_known_order_of_magnitude(default_config, schema):
    """The estimate counts what the run trains: the default plans ~1e14 FLOP,
    the smoke run ~1e10, and a 10× larger training set 10× more study work."""
    from crl_approx.config.budget import work

    def total(over):
        return sum(p[1] for p in work(validate_config(deep_merge(default_config, over), schema)))

    assert 3e13 < total({}) < 3e14
    with open(REPO / "config" / "smoke.yaml") as fh:
        assert 1e9 < total(yaml.safe_load(fh)) < 3e10
    study = {p[0]: p[1] for p in work(validate_config(default_config, schema))}[
        "the sample-size study"
    ]
    big = deep_merge(default_config, {"gmm": {"n_train": 10**6}})
    study10 = {p[0]: p[1] for p in work(validate_config(big, schema))}["the sample-size study"]
    assert study10 == pytest.approx(10 * study, rel=0.01)


def test_config_lists_and_mappings_are_parsed_as_snakemake_parses_a_value(default_config, schema):
    """Snakemake passes `--config seeds=[0,1]` as ['0', '1'] (every item a string); the items are
    parsed as Snakemake parses a top-level --config value (int, float, True/False, else str)."""
    cli = {"seeds": ["0", "1"], "gmm": {"n_train": "4096", "mu_x": "1.5"}}
    cli["sample_size"] = {"fresh": "False", "pools": ["4096"], "lr_protocols": ["4096"]}
    merged = deep_merge(default_config, cli)
    cfg = validate_config(merged, schema, cli=cli)
    assert cfg["seeds"] == [0, 1]
    assert (cfg["gmm"]["n_train"], cfg["gmm"]["mu_x"]) == (4096, 1.5)
    assert cfg["sample_size"]["fresh"] is False and cfg["sample_size"]["pools"] == [4096]
    # the same strings from a YAML file are strings: refused
    with pytest.raises(ConfigError, match=r"config key 'seeds\.0'"):
        validate_config(merged, schema)


def test_a_bad_config_value_says_how_to_pass_lists_and_mappings(default_config, schema):
    cli = {"seeds": ["zero"]}
    with pytest.raises(ConfigError) as info:
        validate_config(deep_merge(default_config, cli), schema, cli=cli)
    assert "config key 'seeds.0'" in str(info.value) and "--configfile" in str(info.value)


def test_a_nan_from_the_command_line_is_refused(default_config, schema):
    """`--config tau=nan` reaches the config as float('nan') (Snakemake's float parser)."""
    for cli in ({"tau": float("nan")}, {"theory": {"eps": ["nan", "0.1"]}}):
        with pytest.raises(ConfigError, match="is not a finite number"):
            validate_config(deep_merge(default_config, cli), schema, cli=cli)
