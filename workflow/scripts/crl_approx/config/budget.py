"""The run's work and memory, estimated from the config before any job (:mod:`crl_approx.config`
runs it after the cross-key rules), so that a config whose sizes are absurd is refused up front
with the key(s) and the estimate, not after hours or by the kernel's OOM killer.

Estimates are orders of magnitude, not predictions: training costs 6 × parameters × points per
step for the two towers plus 6 × B² × D for the in-batch score matrix (forward and backward), every
seed, every run of every rule; evaluation on the quadrature and the Monte Carlo are added. The
default config estimates ~1e14 FLOP of work (tests/unit/test_config.py checks the order of
magnitude); the limit is :data:`MAX_FLOP`, ~100× that. The largest single array must fit in the
host's memory. ``allow_large_run: true`` (a top-level config key) lets a user who means it go on.
"""

from __future__ import annotations

import itertools
import math
import os

#: the most FLOP of estimated work a run may plan without allow_large_run
MAX_FLOP = 1e16
#: the memory assumed when the host's cannot be read
FALLBACK_MEMORY = 64 * 2**30


def host_memory() -> int:
    """The host's physical memory in bytes (``FALLBACK_MEMORY`` where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return FALLBACK_MEMORY


def tower_params(d_in: int, width: int, depth: int, d_out: int) -> int:
    """Weights and biases of one MLP tower."""
    sizes = [d_in, *([width] * (depth - 1)), d_out]
    return sum((a + 1) * b for a, b in itertools.pairwise(sizes))


def _step_flop(d_x: int, d_y: int, dim: int, points: int, train: dict) -> float:
    params = tower_params(d_x, train["width"], train["depth"], dim)
    params += tower_params(d_y, train["width"], train["depth"], dim)
    return 6.0 * params * points + 6.0 * points**2 * dim


def _study_steps(cfg: dict) -> int:
    """Optimiser steps of every cell of the sample-size study (one seed)."""
    study, train, dims = cfg["sample_size"], cfg["train"], cfg["gmm"]["dims"]
    budget = train["epochs"] * (cfg["gmm"]["n_train"] // train["batch_size"])
    cells = (len(study["pools"]) + bool(study["fresh"])) * len(dims)
    mults = sum(study["budget_multipliers"]) if study["fresh"] else 0
    lrs = len(study["other_lrs"]) * len(study["lr_protocols"])
    return budget * (cells + (mults + lrs) * len(study["budget_dims"]))


def work(cfg: dict) -> list[tuple[str, float, tuple[str, ...]]]:
    """(part of the run, estimated FLOP, the keys that drive it) for every part."""
    train, gmm, lcgm, seeds = cfg["train"], cfg["gmm"], cfg["lcgm"], len(cfg["seeds"])
    batch, sizes = train["batch_size"], ("train.width", "train.depth", "seeds")
    n_runs = len(set(train["objectives"]) | {train["default_objective"]})
    n_runs *= len(cfg["ablation"]["scores"])
    gmm_steps = train["epochs"] * (gmm["n_train"] // batch)
    nodes = 2 * train["population_nodes"]
    parts = []
    for objective in train["objectives"]:
        if objective == "samples":
            steps, points = gmm_steps, batch
            keys = ("gmm.n_train", "train.epochs", "train.batch_size")
        else:
            steps, points = train["population_steps"], nodes
            keys = ("train.population_steps", "train.population_nodes")
        flop = sum(steps * _step_flop(1, 1, d, points, train) for d in gmm["dims"])
        parts.append((f"training on the mixture ({objective})", flop * n_runs, keys))
    quad = 2 * gmm["quadrature_nodes"]
    checkpoints = train["epochs"] + len(cfg["dynamics"]["early_steps"])
    evals = n_runs * checkpoints * len(gmm["dims"]) * quad**2 * (max(gmm["dims"]) + 2)
    parts.append(("evaluation on the quadrature", evals, ("gmm.quadrature_nodes", "train.epochs")))
    parts.append(("spectra (SVD)", 20.0 * quad**3, ("gmm.quadrature_nodes",)))
    lcgm_steps = train["epochs"] * (lcgm["n_train"] // batch)
    flop = sum(
        lcgm_steps * _step_flop(lcgm["d_x"], lcgm["d_y"], d, batch, train) for d in lcgm["dims"]
    )
    parts.append(("training on the LCGM", flop, ("lcgm.n_train", "train.epochs", "lcgm.dims")))
    flop = _study_steps(cfg) * _step_flop(1, 1, max(gmm["dims"]), batch, train)
    study_keys = ("gmm.n_train", "sample_size.budget_multipliers", "sample_size.pools")
    parts.append(("the sample-size study", flop, (*study_keys, "train.epochs")))
    digits = cfg["digits"]
    flop = 0.0
    for g in digits["groupings"]:
        flop += sum(
            g.get("steps", digits["steps"]) * _step_flop(64, 64, d, digits["batch_size"], train)
            for d in g["dims"]
        )
    for d in digits["halves_dims"]:
        flop += digits["halves_steps"] * _step_flop(32, 32, d, digits["batch_size"], train)
    parts.append(
        (
            "Experiment R (digits)",
            flop,
            ("digits.steps", "digits.groupings", "digits.halves_steps", "digits.batch_size"),
        )
    )
    noise = cfg["noise"]
    per_draw = {"gmm": 100, "lcgm": 20 * lcgm["K"] * (lcgm["d_x"] + lcgm["d_y"])}
    flop = noise["n_samples"] * sum(per_draw[d] for d in noise["datasets"])
    parts.append(("the noise Monte Carlo", flop, ("noise.n_samples",)))
    return [
        (name, flop * seeds, keys if "seeds" in keys else (*keys, *sizes))
        for name, flop, keys in parts
    ]


def arrays(cfg: dict) -> list[tuple[str, float, tuple[str, ...]]]:
    """(array, estimated bytes, the keys that size it) of the largest arrays a job holds."""
    train, gmm, lcgm, seeds = cfg["train"], cfg["gmm"], cfg["lcgm"], len(cfg["seeds"])
    width, depth, batch = train["width"], train["depth"], train["batch_size"]
    d_max = max(max(gmm["dims"]), max(lcgm["dims"]))
    params = 2 * tower_params(max(lcgm["d_x"], lcgm["d_y"], 64), width, depth, d_max)
    nodes = 2 * max(train["population_nodes"], gmm["quadrature_nodes"])
    pools = max([gmm["n_train"], *cfg["sample_size"]["pools"]])
    noise = cfg["noise"]
    return [
        (
            "the towers and their optimiser state (4 copies, float32)",
            16.0 * params * seeds,
            ("train.width", "train.depth", "seeds"),
        ),
        (
            "a training batch's activations (float32)",
            4.0 * seeds * max(batch, nodes) * width * depth * 3,
            ("train.batch_size", "train.width", "train.depth", "train.population_nodes"),
        ),
        (
            "the seeds' in-batch score matrices (float32)",
            4.0 * seeds * max(batch, nodes) ** 2,
            ("train.batch_size", "train.population_nodes", "gmm.quadrature_nodes", "seeds"),
        ),
        (
            "a held-out block's score matrix (float64)",
            8.0 * max(lcgm["n_candidates"], cfg["digits"]["n_candidates"]) ** 2,
            ("lcgm.n_candidates", "digits.n_candidates"),
        ),
        (
            "a seed's Gaussian-mixture pairs (float64)",
            8.0 * 2 * (pools + gmm["n_val"]),
            ("gmm.n_train", "gmm.n_val", "sample_size.pools"),
        ),
        (
            "a seed's LCGM pairs (float64)",
            8.0
            * (lcgm["d_x"] + lcgm["d_y"])
            * sum(lcgm[k] for k in ("n_train", "n_val", "n_probe_fit", "n_probe_test")),
            ("lcgm.n_train", "lcgm.n_val", "lcgm.n_probe_fit", "lcgm.n_probe_test", "lcgm.d_x"),
        ),
        (
            "a Monte Carlo chunk (float64)",
            8.0 * noise["chunk"] * (lcgm["d_x"] + 2 * lcgm["d_y"]),
            ("noise.chunk", "lcgm.d_x", "lcgm.d_y"),
        ),
        (
            "the rank check's kernel (float64)",
            8.0 * 3 * lcgm["rank_check_samples"] ** 2,
            ("lcgm.rank_check_samples",),
        ),
    ]


def _fmt_bytes(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def _values(cfg: dict, keys) -> str:
    """``key = value`` of each dotted key (seeds: their number)."""
    out = []
    for key in keys:
        node = cfg
        for part in key.split("."):
            node = node[part]
        out.append(f"{key} = {len(node) if key == 'seeds' else node}")
    return ", ".join(out)


def _share(cfg: dict, schema: dict, key: str) -> float:
    """How close a key's value is to its schema maximum (the largest item of a list; seeds:
    their number), 0 where there is none."""
    node, sub = cfg, schema
    for part in key.split("."):
        node, sub = node[part], sub.get("properties", {}).get(part, {})
    if key == "seeds":
        return len(node) / sub.get("maxItems", math.inf)
    if isinstance(node, list):
        node, sub = max(node, default=0), sub.get("items", {})
    return node / sub.get("maximum", math.inf) if isinstance(node, int | float) else 0.0


def budget_errors(cfg: dict, memory: int | None = None, schema: dict | None = None) -> list[str]:
    """Messages for a run whose estimated work exceeds :data:`MAX_FLOP` or whose largest array
    exceeds the host's memory, each naming first the key of the part whose value is nearest its
    schema maximum; none with ``allow_large_run: true``."""
    if cfg.get("allow_large_run"):
        return []
    memory = host_memory() if memory is None else memory
    errors = []
    parts = work(cfg)
    total = sum(p[1] for p in parts)

    def ordered(keys):
        return sorted(keys, key=lambda k: -_share(cfg, schema or {}, k))

    if total > MAX_FLOP:
        name, flop, keys = max(parts, key=lambda p: p[1])
        keys = ordered(keys)
        errors.append(
            f"config key '{keys[0]}': the run's estimated work is {total:.2g} FLOP (limit "
            f"{MAX_FLOP:.0e}, ~100× the default run), most of it {name} ({flop:.2g} FLOP; "
            f"{_values(cfg, keys)}); allowed: smaller sizes, or allow_large_run: true to run it "
            f"anyway"
        )
    name, size, keys = max(arrays(cfg), key=lambda a: a[1])
    if size > memory:
        keys = ordered(keys)
        errors.append(
            f"config key '{keys[0]}': {name} would take ~{_fmt_bytes(size)}, more than this host's "
            f"{_fmt_bytes(memory)} of memory ({_values(cfg, keys)}); allowed: smaller sizes, or "
            f"allow_large_run: true to run it anyway"
        )
    return errors
