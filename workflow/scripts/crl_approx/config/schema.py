"""The per-value half of config validation (:mod:`crl_approx.config` runs it): Snakemake's
``--config`` lists and mappings parsed, every number finite, integral floats of integer keys
normalised to int, and the JSON schema's errors turned into messages that name the key path.

Every function returns messages (``config key 'a.b': ... (allowed: ...)``) and never raises.
"""

from __future__ import annotations

import copy
import difflib
import math

#: how Snakemake parses one ``--config key=value`` (snakemake.cli.parse_config): int, float,
#: True/False, else the string; lists and mappings arrive with every item a string
CLI_HINT = (
    "a --config value is parsed by Snakemake (int, float, True/False, else a string); lists and "
    "mappings given with --config have their items parsed the same way here. Anything else: "
    "write a YAML file and pass --configfile mine.yaml"
)


def key_name(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _cli_scalar(text):
    """One string item of a ``--config`` list or mapping, parsed as Snakemake parses a top-level
    ``--config`` value."""
    if not isinstance(text, str):
        return text
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def _cli_items(value):
    if isinstance(value, dict):
        return {k: _cli_items(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cli_items(v) for v in value]
    return _cli_scalar(value)


def parse_cli(config: dict, cli: dict, _nested: bool = False) -> dict:
    """``config`` with every list or mapping that ``--config`` set (``cli``, Snakemake's parsed
    ``--config``: its items are strings) replaced by the same structure with its items parsed:
    ``--config seeds=[0,1]`` gives [0, 1], as ``seeds: [0, 1]`` in a YAML file. Top-level scalars
    are Snakemake's already."""
    out = copy.deepcopy(config)
    for key, value in (cli or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = parse_cli(out[key], value, _nested=True)
        elif isinstance(value, dict | list) or _nested:
            out[key] = _cli_items(value)
    return out


def cli_paths(cli: dict, path=()) -> set[tuple]:
    """The key paths that ``--config`` set (their messages carry :data:`CLI_HINT`)."""
    out = set()
    for key, value in (cli or {}).items():
        here = (*path, key)
        out.add(here)
        if isinstance(value, dict):
            out |= cli_paths(value, here)
    return out


def _walk(node, path=()):
    """(path, value) of every leaf of a config (lists and mappings entered)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, (*path, i))
    else:
        yield path, node


def non_finite(config: dict) -> tuple[list[str], set[tuple]]:
    """A message per NaN or ±inf anywhere in the config (items of lists too), and their paths:
    a schema range check is false for NaN, and a sum or product of an inf is no size."""
    errors, paths = [], set()
    for path, value in _walk(config):
        if isinstance(value, float) and not math.isfinite(value):
            paths.add(path)
            errors.append(
                f"config key '{key_name(path)}': {value!r} is not a finite number (allowed: "
                f"finite numbers only; NaN and ±inf are refused everywhere)"
            )
    return errors, paths


def _is_integer_node(schema: dict) -> bool:
    return schema.get("type") == "integer" or any(
        s.get("type") == "integer" for s in schema.get("oneOf", [])
    )


def normalise_integers(node, schema: dict):
    """``node`` with every integral float at an integer key turned into an int (4096.0 → 4096),
    as if written 4096; a non-integral float stays for the schema to refuse."""
    if isinstance(node, dict):
        props = schema.get("properties", {})
        return {k: normalise_integers(v, props.get(k, {})) for k, v in node.items()}
    if isinstance(node, list):
        return [normalise_integers(v, schema.get("items", {})) for v in node]
    if isinstance(node, float) and math.isfinite(node) and node.is_integer():
        if _is_integer_node(schema):
            return int(node)
    return node


def _subschema(schema: dict, path) -> dict:
    node = schema
    for part in path:
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part, {})
    return node


def allowed(schema: dict) -> str:
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
    if "maxItems" in schema:
        parts.append(f"at most {schema['maxItems']} item(s)")
    if schema.get("uniqueItems"):
        parts.append("no repeated items")
    if schema.get("type") == "array" and "items" in schema:
        parts.append("items: " + allowed(schema["items"]))
    text = ", ".join(parts)
    if "description" in schema:
        text = f"{text}; {schema['description']}" if text else schema["description"]
    return text


def format_error(err, schema: dict, from_cli: set[tuple] = frozenset()) -> list[str]:
    """The message(s) of one jsonschema error, naming the key path."""
    path = list(err.absolute_path)
    if err.validator == "additionalProperties":
        node = _subschema(schema, path)
        known = sorted(node.get("properties", {}))
        extra = sorted(set(err.instance) - set(known))
        msgs = []
        for name in extra:
            hint = difflib.get_close_matches(name, known, n=1)
            did = f"; did you mean '{key_name([*path, hint[0]])}'?" if hint else ""
            msgs.append(
                f"config key '{key_name([*path, name])}': unknown key{did} "
                f"(allowed keys here: {', '.join(known)})"
            )
        return msgs
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        node = _subschema(schema, [*path, missing])
        return [
            f"config key '{key_name([*path, missing])}': required but missing ({allowed(node)})"
        ]
    node = _subschema(schema, path)
    cli = any(tuple(path[:n]) in from_cli for n in range(1, len(path) + 1))
    return [
        f"config key '{key_name(path)}': {err.instance!r} is not valid: {err.message} "
        f"(allowed: {allowed(node)})" + (f" [{CLI_HINT}]" if cli else "")
    ]


def fill_defaults(instance: dict, schema: dict) -> None:
    for name, sub in schema.get("properties", {}).items():
        if name not in instance and "default" in sub:
            instance[name] = copy.deepcopy(sub["default"])
        if isinstance(instance.get(name), dict) and sub.get("type") == "object":
            fill_defaults(instance[name], sub)
