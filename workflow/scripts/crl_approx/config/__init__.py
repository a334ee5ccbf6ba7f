"""Validation of the merged configuration, with messages that name the offending key.

Used by ``workflow/rules/common.smk`` at parse time, before any job runs: a bad config stops the
workflow with a :class:`ConfigError` whose message lists every problem as
``config key 'gmm.sigma_x': ... (allowed: ...)``. :func:`validate_config` runs, in order:

* ``schema``: ``--config`` lists and mappings parsed, every number finite, integral floats of
  integer keys made ints, and the JSON schema (structure, types, ranges, unknown keys);
* ``rules``: the constraints that span several keys (Experiment R's in ``digits``, Experiment
  W's in ``widths``, Experiment S's in ``smoothness``);
* ``budget``: the run's estimated work and largest array (``allow_large_run: true`` overrides).

Also the paper's values and the settings they hold in (:func:`load_paper_values`), and
``sections``: the report's sections (targets, native report categories); ``experiments``: the
experiment contract (each rules file's declaration, the lists derived from it); ``reruns``: what a
change to each key reruns (config/reruns.yaml); :func:`report_config_errors`: ``--report`` on
results of another configuration. Imports only
yaml and jsonschema, so parsing the Snakefile stays fast.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from .budget import budget_errors
from .rules import cross_key_errors
from .schema import (
    cli_paths,
    fill_defaults,
    format_error,
    non_finite,
    normalise_integers,
    parse_cli,
)


class ConfigError(ValueError):
    """The configuration is invalid; the message names every bad key."""


def load_paper_values(path: str | Path, config: dict | None = None) -> dict:
    """Every number the paper reports (workflow/resources/paper_values.yaml), as printed. With
    ``config``, only those whose setting (the yaml's ``settings``) the run shares: see
    :func:`paper_in_setting`."""
    with open(path, encoding="utf-8") as fh:
        paper = yaml.safe_load(fh)
    return paper if config is None else paper_in_setting(paper, config)


#: which values of paper_values.yaml each recorded setting covers: (section, field)
SETTING_FIELDS = {
    "table1_spectral_tail": [("table1", "spectral_tail")],
    "table1_truncation": [("table1", "truncation_excess_risk")],
    "table1_mlp": [("table1", "mlp_l2_distance"), ("table1", "mlp_excess_risk")],
    "lcgm": [("lcgm", "probe_r2_f"), ("lcgm", "probe_r2_g")],
    "noise": [("noise", "mu_hat"), ("noise", "rate_exponent")],
}


def setting_differences(setting: dict, config: dict) -> list[str]:
    """The dotted config keys whose value differs from the paper's ``setting`` (numbers compared
    to 1e-12 relative)."""
    out = []
    for key, theirs in setting.items():
        ours = config
        for part in key.split("."):
            ours = ours.get(part) if isinstance(ours, dict) else None
        same = ours == theirs
        if isinstance(ours, int | float) and isinstance(theirs, int | float):
            same = math.isclose(ours, theirs, rel_tol=1e-12)
        if not same:
            out.append(key)
    return out


def subset(config: dict, keys) -> dict:
    """The part of ``config`` that the dotted ``keys`` name, nested as in the config."""
    return setting_config({"settings": {"keys": list(keys)}}, config)


def setting_config(paper: dict, config: dict) -> dict:
    """The part of ``config`` that the paper's settings name (nested as in the config): what a
    rule comparing its table with the paper's values depends on, and no more (a table rule given
    whole sections reran on a plot size)."""
    out: dict = {}
    for setting in paper.get("settings", {}).values():
        for key in setting:
            *parents, leaf = key.split(".")
            src, dst = config, out
            for part in parents:
                src, dst = src[part], dst.setdefault(part, {})
            dst[leaf] = src[leaf]
    return out


def paper_in_setting(paper: dict, config: dict) -> dict:
    """A copy of the paper's values with every value whose setting differs from the run's set to
    None, and ``differs``: {setting name: [keys that differ]} for those settings."""
    out = copy.deepcopy(paper)
    out["differs"] = {}
    for name, setting in paper.get("settings", {}).items():
        keys = setting_differences(setting, config)
        if not keys:
            continue
        out["differs"][name] = keys
        for section, field in SETTING_FIELDS[name]:
            rows = out[section] if isinstance(out[section], list) else [out[section]]
            for row in rows:
                row[field] = None
    return out


def flat(node: dict, prefix: str = "") -> dict:
    """A nested config as {dotted key: value} (lists are values)."""
    out = {}
    for key, value in node.items():
        if isinstance(value, dict) and value:
            out |= flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def report_config_errors(recorded: str | Path, config: dict) -> list[str]:
    """Why ``snakemake --report`` must not describe ``config``: the keys whose value differs from
    the configuration the results were made with (``recorded``, written by build_report); none
    when nothing is recorded yet (no report was built)."""
    recorded = Path(recorded)
    if not recorded.exists():
        return []
    with open(recorded, encoding="utf-8") as fh:
        theirs = flat(yaml.safe_load(fh) or {})
    ours = flat(json.loads(json.dumps(config, default=str)))
    differ = sorted(
        (k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k)),
        key=lambda k: (k.count("."), k),  # top-level keys (seeds, tau) first
    )
    if not differ:
        return []
    shown = ", ".join(differ[:8]) + (f" and {len(differ) - 8} more" if len(differ) > 8 else "")
    return [
        f"snakemake --report: results/ were made with another configuration (keys that differ: "
        f"{shown}; the run's is recorded in {recorded}); give --report the run's own "
        f"--configfile / --config, e.g. snakemake --configfile config/smoke.yaml --report "
        f"results/provenance.zip after a smoke run"
    ]


def load_schema(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def validate_config(
    config: dict, schema: dict, cli: dict | None = None, memory: int | None = None
) -> dict:
    """Return a validated copy of ``config`` with schema defaults filled in and integral floats of
    integer keys made ints (4096.0 → 4096). ``cli``: Snakemake's parsed ``--config`` (its lists
    and mappings hold strings; their items are parsed as Snakemake parses a scalar). ``memory``:
    the bytes the largest array may take (default: the host's).

    Raises :class:`ConfigError` naming every offending key: non-finite numbers, schema errors,
    then (once those pass) the cross-key rules, then the run's estimated work and memory.
    """
    cfg = parse_cli(config, cli or {})
    errors, bad_paths = non_finite(cfg)
    cfg = normalise_integers(cfg, schema)
    from_cli = cli_paths(cli or {})
    validator = Draft202012Validator(schema)
    for err in sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path))):
        if tuple(err.absolute_path) not in bad_paths:
            errors.extend(format_error(err, schema, from_cli))
    if not errors:
        fill_defaults(cfg, schema)
        errors = cross_key_errors(cfg)
    if not errors:
        errors = budget_errors(cfg, memory, schema)
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))
    return cfg
