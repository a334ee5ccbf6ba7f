"""Validation of the merged configuration, with messages that name the offending key.

Used by ``workflow/rules/common.smk`` at parse time, before any job runs: a bad config stops the
workflow with a :class:`ConfigError` whose message lists every problem as
``config key 'gmm.sigma_x': ... (allowed: ...)``. Besides the JSON schema (structure, types, ranges,
unknown keys) it checks the constraints that span several keys.

Imports only yaml and jsonschema, so parsing the Snakefile stays fast.
"""

from __future__ import annotations

import copy
import difflib
import math
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator


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


def load_schema(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _subschema(schema: dict, path) -> dict:
    node = schema
    for part in path:
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part, {})
    return node


def _allowed(schema: dict) -> str:
    """A short human description of what a schema node accepts."""
    parts = []
    if "type" in schema:
        parts.append(f"type {schema['type']}")
    for word, op in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if word in schema:
            parts.append(f"{op} {schema[word]}")
    if "enum" in schema:
        parts.append("one of " + ", ".join(map(repr, schema["enum"])))
    if "minItems" in schema:
        parts.append(f"at least {schema['minItems']} item(s)")
    if schema.get("uniqueItems"):
        parts.append("no repeated items")
    if schema.get("type") == "array" and "items" in schema:
        parts.append("items: " + _allowed(schema["items"]))
    text = ", ".join(parts)
    if "description" in schema:
        text = f"{text}; {schema['description']}" if text else schema["description"]
    return text


def _format_error(err, schema: dict) -> list[str]:
    path = list(err.absolute_path)
    if err.validator == "additionalProperties":
        node = _subschema(schema, path)
        known = sorted(node.get("properties", {}))
        extra = sorted(set(err.instance) - set(known))
        msgs = []
        for name in extra:
            hint = difflib.get_close_matches(name, known, n=1)
            did = f"; did you mean '{_key([*path, hint[0]])}'?" if hint else ""
            msgs.append(
                f"config key '{_key([*path, name])}': unknown key{did} "
                f"(allowed keys here: {', '.join(known)})"
            )
        return msgs
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        node = _subschema(schema, [*path, missing])
        return [f"config key '{_key([*path, missing])}': required but missing ({_allowed(node)})"]
    node = _subschema(schema, path)
    return [
        f"config key '{_key(path)}': {err.instance!r} is not valid: {err.message} "
        f"(allowed: {_allowed(node)})"
    ]


def _fill_defaults(instance: dict, schema: dict) -> None:
    for name, sub in schema.get("properties", {}).items():
        if name not in instance and "default" in sub:
            instance[name] = copy.deepcopy(sub["default"])
        if isinstance(instance.get(name), dict) and sub.get("type") == "object":
            _fill_defaults(instance[name], sub)


def _cross_key_errors(cfg: dict) -> list[str]:
    """Constraints between keys that a JSON schema cannot express cleanly."""
    errors = []
    gmm = cfg.get("gmm", {})
    n_hi, n_lo = gmm.get("quadrature_nodes"), gmm.get("convergence_nodes")
    if n_hi is not None and n_lo is not None and n_lo >= n_hi:
        errors.append(
            f"config key 'gmm.convergence_nodes': {n_lo} is not smaller than "
            f"gmm.quadrature_nodes = {n_hi} (allowed: an integer < gmm.quadrature_nodes; it is "
            f"the lower node count of the convergence record)"
        )
    dims, n_eig = gmm.get("dims") or [], gmm.get("n_eigenvalues")
    if dims and n_hi is not None and n_lo is not None:
        computed = 2 * min(n_hi, n_lo)  # eigenvalues computed at the coarser of the two grids
        if max(dims) >= computed:
            errors.append(
                f"config key 'gmm.dims': D = {max(dims)} is not smaller than the {computed} "
                f"eigenvalues computed (2 × min(gmm.quadrature_nodes, gmm.convergence_nodes)); "
                f"allowed: every D < {computed}"
            )
        if n_eig is not None and n_eig > computed:
            errors.append(
                f"config key 'gmm.n_eigenvalues': {n_eig} exceeds the {computed} eigenvalues "
                f"computed; allowed: at most {computed}"
            )
    if dims and n_eig is not None and max(dims) > n_eig:
        errors.append(
            f"config key 'gmm.dims': D = {max(dims)} exceeds gmm.n_eigenvalues = {n_eig}; "
            f"allowed: every D <= gmm.n_eigenvalues (eigenvalues.csv must list λ_D)"
        )
    train = cfg.get("train", {})
    objectives = train.get("objectives") or []
    if (
        train.get("default_objective")
        and objectives
        and train["default_objective"] not in objectives
    ):
        errors.append(
            f"config key 'train.default_objective': {train['default_objective']!r} is not in "
            f"train.objectives = {objectives}; allowed: one of {objectives}"
        )
    if "samples" in objectives and train.get("batch_size", 0) > gmm.get("n_train", 0):
        errors.append(
            f"config key 'train.batch_size': {train['batch_size']} exceeds gmm.n_train = "
            f"{gmm.get('n_train')}; allowed: at most gmm.n_train"
        )
    if "population" in objectives and train.get("population_steps", 0) < train.get("epochs", 0):
        errors.append(
            f"config key 'train.population_steps': {train['population_steps']} is fewer than "
            f"train.epochs = {train['epochs']}; allowed: at least train.epochs (one per checkpoint)"
        )
    lcgm = cfg.get("lcgm", {})
    k = lcgm.get("K")
    if k is not None:
        for key in ("d_x", "d_y"):
            if lcgm.get(key) is not None and k > lcgm[key]:
                errors.append(
                    f"config key 'lcgm.K': {k} classes exceed lcgm.{key} = {lcgm[key]}; allowed: "
                    f"K <= lcgm.{key} (the class-mean directions are orthonormal)"
                )
        prior = lcgm.get("prior")
        if isinstance(prior, list) and (len(prior) != k or abs(sum(prior) - 1) > 1e-9):
            errors.append(
                f"config key 'lcgm.prior': {prior} is not K = {k} positive numbers summing to 1; "
                f"allowed: 'uniform' or K = {k} numbers summing to 1"
            )
        if lcgm.get("n_candidates", 0) > lcgm.get("n_probe_test", 0):
            errors.append(
                f"config key 'lcgm.n_candidates': {lcgm['n_candidates']} exceeds "
                f"lcgm.n_probe_test = {lcgm['n_probe_test']}; allowed: at most lcgm.n_probe_test"
            )
        if train.get("batch_size", 0) > lcgm.get("n_train", 0):
            errors.append(
                f"config key 'train.batch_size': {train['batch_size']} exceeds lcgm.n_train = "
                f"{lcgm.get('n_train')}; allowed: at most lcgm.n_train"
            )
    noise = cfg.get("noise", {})
    window = noise.get("window")
    if window and len(window) == 2:
        lo, hi = window
        t_min, t_max = noise.get("t_min", 0), noise.get("t_max", math.inf)
        if not lo < hi:
            errors.append(
                f"config key 'noise.window': {window} is not an increasing pair; allowed: "
                f"[t_lo, t_hi] with 0 < t_lo < t_hi"
            )
        elif lo < t_min or hi > t_max:
            errors.append(
                f"config key 'noise.window': {window} is not inside [noise.t_min, noise.t_max] = "
                f"[{t_min:g}, {t_max:g}]; allowed: t_min <= t_lo < t_hi <= t_max"
            )
    if noise.get("t_min") is not None and noise.get("t_max") is not None:
        if noise["t_min"] >= noise["t_max"]:
            errors.append(
                f"config key 'noise.t_min': {noise['t_min']:g} is not below noise.t_max = "
                f"{noise['t_max']:g}; allowed: t_min < t_max"
            )
    errors += _sample_size_errors(cfg)
    cal = cfg.get("calibration", {})
    if cal.get("truncation_max_rank") and n_hi and cal["truncation_max_rank"] >= 2 * n_hi:
        errors.append(
            f"config key 'calibration.truncation_max_rank': {cal['truncation_max_rank']} is not "
            f"below the {2 * n_hi} eigenvalues of the evaluation quadrature; allowed: < {2 * n_hi}"
        )
    return errors


def _sample_size_errors(cfg: dict) -> list[str]:
    study, dims = cfg.get("sample_size", {}), cfg.get("gmm", {}).get("dims") or []
    errors = []
    outside = [d for d in study.get("budget_dims", []) if d not in dims]
    if outside:
        errors.append(
            f"config key 'sample_size.budget_dims': {outside} not in gmm.dims = {dims}; allowed: "
            f"a subset of gmm.dims"
        )
    known = ["fresh"] * bool(study.get("fresh")) + list(study.get("pools", []))
    unknown = [p for p in study.get("lr_protocols", []) if p not in known]
    if unknown:
        errors.append(
            f"config key 'sample_size.lr_protocols': {unknown} not among the study's protocols "
            f"{known}; allowed: 'fresh' (with sample_size.fresh: true) or sizes in "
            f"sample_size.pools"
        )
    batch = cfg.get("train", {}).get("batch_size", 0)
    small = [n for n in study.get("pools", []) if n < batch]
    if small:
        errors.append(
            f"config key 'sample_size.pools': {small} smaller than train.batch_size = {batch}; "
            f"allowed: pools of at least one batch"
        )
    return errors


def validate_config(config: dict, schema: dict) -> dict:
    """Return a validated copy of ``config`` with schema defaults filled in.

    Raises :class:`ConfigError` naming every offending key.
    """
    cfg = copy.deepcopy(config)
    validator = Draft202012Validator(schema)
    errors = []
    for err in sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path))):
        errors.extend(_format_error(err, schema))
    if not errors:
        _fill_defaults(cfg, schema)
        errors = _cross_key_errors(cfg)
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))
    return cfg
