"""Provenance of the intermediate files: what wrote each file that a later rule reads, checked
when it is read.

Every intermediate (pairs and pools, images, models, checkpoints, features, metrics, probes, Monte
Carlo counts, the LCGM design) carries a record of the job that wrote it::

    {"path": "results/data/gmm/seed~0/pairs.npz",   # as written, relative to the workdir
     "rule": "make_dataset", "wildcards": {"dataset": "gmm", "seed": "0"},
     "params_sha256": "…",                          # the rule's params: the config keys it reads
     "shape": {"x_train": [[4096, 1], "float64"], …}}

stored inside the file: an ``npz`` entry ``__provenance__`` (a JSON string), a key of the same
name in a ``json`` object or in the dict a ``model.pt`` holds. The CSV tables are not covered (a
header line would change every table a user reads; their readers are the assemble and plot rules).

A reader opens the file through :func:`load_npz`, :func:`load_json` or :func:`load_torch`, which
raise :class:`IntegrityError` naming the path, what is wrong and how to heal when the file

* cannot be read (truncated or corrupt: ``BadZipFile``, ``PytorchStreamReader failed``, bad JSON),
* carries no record (written by hand or by an older version of the workflow),
* was written for another path (a pool of 1024 pairs copied over a seed's pairs, seed 1's file
  copied over seed 0's: the record names the other rule or wildcards),
* holds arrays other than those recorded;

and :func:`same_job` checks that files of one job (a seed's metrics and checkpoints) come from the
same job, and :func:`load_npz_group` that the files one job reads of one rule (every seed's pairs)
agree on its params.

The record is filled from the running job, which :func:`crl_approx.runtime.rule_logging` declares
(:func:`crl_approx.runtime.job`); outside a job (tests, notebooks) the rule is ``None``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

#: the key (npz entry, json key, model.pt key) that holds a file's record
FIELD = "__provenance__"


class IntegrityError(RuntimeError):
    """An intermediate file that cannot be trusted; the message names it and how to heal."""


def _rel(path) -> str:
    """A path as the workflow names it: relative to the workdir (the job's cwd)."""
    path = os.fspath(path)
    return os.path.normpath(os.path.relpath(path) if os.path.isabs(path) else path)


def record(path, shape) -> dict:
    from .runtime import current_job

    return {"path": _rel(path), **current_job(), "shape": shape}


def _heal(path, rule=None) -> str:
    by = f" (rule {rule})" if rule else ""
    return (
        f"To heal: rerun with `--forcerun {_rel(path)}` (remakes it{by} and what reads it), "
        f"or delete {_rel(path)} and rerun."
    )


def _fail(path, what: str, rule=None):
    raise IntegrityError(f"{_rel(path)}: {what}. {_heal(path, rule)}")


def check(path, rec, shape) -> dict:
    """The record ``rec`` of the file at ``path`` whose content has the given shape."""
    if rec is None:
        _fail(path, "carries no provenance record (written by hand or by an older workflow)")
    if rec.get("path") != _rel(path):
        wc = ", ".join(f"{k}={v}" for k, v in rec.get("wildcards", {}).items())
        _fail(
            path,
            f"holds {rec.get('path')}, written by rule {rec.get('rule')} ({wc}), "
            "not the file expected here",
            rec.get("rule"),
        )
    if rec.get("shape") != shape:
        _fail(path, f"holds {shape}, but its record says {rec.get('shape')}", rec.get("rule"))
    return rec


#: what files of one rule read together share (their wildcards differ)
SAME_RULE = ("rule", "params_sha256")


def same_job(paths_records, keys=("rule", "wildcards", "params_sha256")) -> None:
    """Files that one job wrote together (``[(path, record), …]``) must agree on rule,
    wildcards and params; files of one rule read together (every seed's pairs), with
    ``keys=("rule", "params_sha256")``, on rule and params."""
    (p0, r0), *rest = paths_records
    for p, r in rest:
        for key in keys:
            if r.get(key) != r0.get(key):
                _fail(p, f"{key} {r.get(key)} differs from {key} {r0.get(key)} of {_rel(p0)}")


def _unreadable(path, err):
    _fail(path, f"cannot be read, truncated or corrupt ({type(err).__name__}: {err})")


# --- npz ------------------------------------------------------------------------------------------
def _npz_shape(arrays: dict) -> dict:
    return {k: [list(np.shape(a)), str(np.asarray(a).dtype)] for k, a in sorted(arrays.items())}


def save_npz(path, arrays: dict) -> None:
    """Write ``arrays`` atomically with their record."""
    from .runtime import atomic_path

    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    rec = json.dumps(record(path, _npz_shape(arrays)))
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays, **{FIELD: np.array(rec)})


def load_npz(path, with_record: bool = False):
    """Every array of an npz written by :func:`save_npz`, checked against its record."""
    if not Path(path).exists():
        raise FileNotFoundError(path)
    try:
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as err:  # BadZipFile, EOFError, ValueError, OSError, zlib.error …
        _unreadable(path, err)
    raw = arrays.pop(FIELD, None)
    rec = check(path, None if raw is None else json.loads(str(raw)), _npz_shape(arrays))
    return (arrays, rec) if with_record else arrays


def load_npz_group(paths) -> list[dict]:
    """The npz files one job reads of one rule (every seed's pairs), each checked, and all
    written with the same params (a seed's pairs of another config among them is named)."""
    loaded = [load_npz(p, with_record=True) for p in paths]
    same_job([(p, rec) for p, (_, rec) in zip(paths, loaded, strict=True)], SAME_RULE)
    return [arrays for arrays, _ in loaded]


# --- json -----------------------------------------------------------------------------------------
def _json_shape(obj: dict) -> dict:
    return {"keys": sorted(k for k in obj if k != FIELD)}


def dumps_json(path, obj: dict, **kwargs) -> str:
    """The JSON text of ``obj`` with its record (written by the caller, atomically)."""
    return json.dumps({**obj, FIELD: record(path, _json_shape(obj))}, **kwargs) + "\n"


def write_json(path, obj: dict, **kwargs) -> None:
    from .runtime import atomic_path

    text = dumps_json(path, obj, **kwargs)
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def load_json(path, with_record: bool = False):
    """A JSON object written by :func:`write_json`, without its record, checked."""
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except FileNotFoundError:
        raise
    except Exception as err:
        _unreadable(path, err)
    if not isinstance(obj, dict):
        _fail(path, f"holds a {type(obj).__name__}, not a JSON object")
    rec = check(path, obj.pop(FIELD, None), _json_shape(obj))
    return (obj, rec) if with_record else obj


# --- torch ----------------------------------------------------------------------------------------
def _torch_shape(saved: dict) -> dict:
    return {k: list(v.shape) for k, v in sorted(saved.get("state_dict", {}).items())}


def save_torch(path, saved: dict, tmp) -> None:
    """``torch.save`` of ``saved`` (a dict with a ``state_dict``) to ``tmp`` (the atomic temporary
    of ``path``), with its record."""
    import torch

    torch.save({**saved, FIELD: record(path, _torch_shape(saved))}, tmp)


def load_torch(path, with_record: bool = False):
    import torch

    if not Path(path).exists():
        raise FileNotFoundError(path)
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # RuntimeError: PytorchStreamReader failed …, EOFError, pickle
        _unreadable(path, err)
    if not isinstance(saved, dict):
        _fail(path, f"holds a {type(saved).__name__}, not a saved model")
    rec = check(path, saved.pop(FIELD, None), _torch_shape(saved))
    return (saved, rec) if with_record else saved
