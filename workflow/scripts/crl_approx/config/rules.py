"""The cross-key half of config validation (:mod:`crl_approx.config` runs it after the schema):
every rule that spans several keys, checked before any job, each message naming its keys.

Every function takes the schema-valid config with defaults filled and returns messages.
"""

from __future__ import annotations

import math
import re

from .digits import digits_errors
from .smoothness import smoothness_errors
from .widths import widths_errors

#: the lr wildcard of the study's output paths (rule train_sample_size)
LR_WILDCARD = re.compile(r"[0-9.]+(e-?\d+)?")


def lr_label(lr) -> str:
    """A learning rate as it appears in output paths (lr~0.003)."""
    return f"{float(lr):g}"


def gmm_errors(cfg: dict) -> list[str]:
    errors = []
    gmm = cfg["gmm"]
    n_hi, n_lo = gmm["quadrature_nodes"], gmm["convergence_nodes"]
    if n_lo >= n_hi:
        errors.append(
            f"config key 'gmm.convergence_nodes': {n_lo} is not smaller than "
            f"gmm.quadrature_nodes = {n_hi} (allowed: an integer < gmm.quadrature_nodes; it is "
            f"the lower node count of the convergence record)"
        )
    dims, n_eig = gmm["dims"], gmm["n_eigenvalues"]
    computed = 2 * min(n_hi, n_lo)  # eigenvalues computed at the coarser of the two grids
    if max(dims) >= computed:
        errors.append(
            f"config key 'gmm.dims': D = {max(dims)} is not smaller than the {computed} "
            f"eigenvalues computed (2 × min(gmm.quadrature_nodes, gmm.convergence_nodes)); "
            f"allowed: every D < {computed}"
        )
    if n_eig > computed:
        errors.append(
            f"config key 'gmm.n_eigenvalues': {n_eig} exceeds the {computed} eigenvalues "
            f"computed; allowed: at most {computed}"
        )
    if max(dims) > n_eig:
        errors.append(
            f"config key 'gmm.dims': D = {max(dims)} exceeds gmm.n_eigenvalues = {n_eig}; "
            f"allowed: every D <= gmm.n_eigenvalues (eigenvalues.csv must list λ_D)"
        )
    cal = cfg["calibration"]
    if cal["truncation_max_rank"] >= 2 * n_hi:
        errors.append(
            f"config key 'calibration.truncation_max_rank': {cal['truncation_max_rank']} is not "
            f"below the {2 * n_hi} eigenvalues of the evaluation quadrature; allowed: < {2 * n_hi}"
        )
    return errors


def train_errors(cfg: dict) -> list[str]:
    errors = []
    train, gmm = cfg["train"], cfg["gmm"]
    objectives = train["objectives"]
    if train["default_objective"] not in objectives:
        errors.append(
            f"config key 'train.default_objective': {train['default_objective']!r} is not in "
            f"train.objectives = {objectives}; allowed: one of {objectives}"
        )
    # the sample-size study trains `samples` always; validation averages over full batches (fewer
    # pairs than one batch would give a validation loss of 0.0)
    for key in ("n_train", "n_val"):
        if train["batch_size"] > gmm[key]:
            errors.append(
                f"config key 'train.batch_size': {train['batch_size']} exceeds gmm.{key} = "
                f"{gmm[key]}; allowed: at most gmm.{key}"
            )
    if "population" in objectives and train["population_steps"] < train["epochs"]:
        errors.append(
            f"config key 'train.population_steps': {train['population_steps']} is fewer than "
            f"train.epochs = {train['epochs']}; allowed: at least train.epochs (one per checkpoint)"
        )
    return errors


def lcgm_errors(cfg: dict) -> list[str]:
    errors = []
    lcgm, batch = cfg["lcgm"], cfg["train"]["batch_size"]
    k = lcgm["K"]
    for key in ("d_x", "d_y"):
        if k > lcgm[key]:
            errors.append(
                f"config key 'lcgm.K': {k} classes exceed lcgm.{key} = {lcgm[key]}; allowed: "
                f"K <= lcgm.{key} (the class-mean directions are orthonormal)"
            )
    prior = lcgm["prior"]
    if isinstance(prior, list) and (len(prior) != k or abs(sum(prior) - 1) > 1e-9):
        errors.append(
            f"config key 'lcgm.prior': {prior} is not K = {k} positive numbers summing to 1; "
            f"allowed: 'uniform' or K = {k} numbers summing to 1"
        )
    for key, limit in (("n_candidates", "n_probe_test"), ("n_checkpoint", "n_val")):
        if lcgm[key] > lcgm[limit]:
            errors.append(
                f"config key 'lcgm.{key}': {lcgm[key]} exceeds lcgm.{limit} = {lcgm[limit]}; "
                f"allowed: at most lcgm.{limit}"
            )
    for key in ("n_train", "n_val"):
        if batch > lcgm[key]:
            errors.append(
                f"config key 'train.batch_size': {batch} exceeds lcgm.{key} = {lcgm[key]}; "
                f"allowed: at most lcgm.{key}"
            )
    return errors


def noise_errors(cfg: dict) -> list[str]:
    errors = []
    noise = cfg["noise"]
    lo, hi = noise["window"]
    t_min, t_max = noise["t_min"], noise["t_max"]
    if not lo < hi:
        errors.append(
            f"config key 'noise.window': {noise['window']} is not an increasing pair; allowed: "
            f"[t_lo, t_hi] with 0 < t_lo < t_hi"
        )
    elif lo < t_min or hi > t_max:
        errors.append(
            f"config key 'noise.window': {noise['window']} is not inside [noise.t_min, "
            f"noise.t_max] = [{t_min:g}, {t_max:g}]; allowed: t_min <= t_lo < t_hi <= t_max"
        )
    if t_min >= t_max:
        errors.append(
            f"config key 'noise.t_min': {t_min:g} is not below noise.t_max = {t_max:g}; "
            f"allowed: t_min < t_max"
        )
    return errors


def sample_size_errors(cfg: dict) -> list[str]:
    study, dims = cfg["sample_size"], cfg["gmm"]["dims"]
    errors = []
    if not study["pools"] and not study["fresh"]:
        errors.append(
            "config key 'sample_size.pools': [] with sample_size.fresh: false leaves the study "
            "without a protocol; allowed: at least one pool size, or sample_size.fresh: true"
        )
    outside = [d for d in study["budget_dims"] if d not in dims]
    if outside:
        errors.append(
            f"config key 'sample_size.budget_dims': {outside} not in gmm.dims = {dims}; allowed: "
            f"a subset of gmm.dims"
        )
    known = ["fresh"] * bool(study["fresh"]) + list(study["pools"])
    unknown = [p for p in study["lr_protocols"] if p not in known]
    if unknown:
        errors.append(
            f"config key 'sample_size.lr_protocols': {unknown} not among the study's protocols "
            f"{known}; allowed: 'fresh' (with sample_size.fresh: true) or sizes in "
            f"sample_size.pools"
        )
    batch = cfg["train"]["batch_size"]
    small = [n for n in study["pools"] if n < batch]
    if small:
        errors.append(
            f"config key 'sample_size.pools': {small} smaller than train.batch_size = {batch}; "
            f"allowed: pools of at least one batch"
        )
    errors += _lr_label_errors(cfg)
    return errors


def _lr_label_errors(cfg: dict) -> list[str]:
    """Every learning rate of the study becomes a path wildcard lr~<label>: each label must match
    the rule's wildcard, and two rates must not share a label."""
    errors, seen = [], {lr_label(cfg["train"]["lr"]): "train.lr"}
    for i, lr in enumerate(cfg["sample_size"]["other_lrs"]):
        label, key = lr_label(lr), f"sample_size.other_lrs.{i}"
        if not LR_WILDCARD.fullmatch(label):
            errors.append(
                f"config key '{key}': {lr!r} gives the path label lr~{label}; allowed: a rate "
                f"whose label matches {LR_WILDCARD.pattern}"
            )
        elif label in seen and seen[label] != "train.lr":
            errors.append(
                f"config key '{key}': {lr!r} has the path label lr~{label} of {seen[label]}; "
                f"allowed: rates that differ in their first 6 significant digits"
            )
        seen.setdefault(label, key)
    return errors


def theory_errors(cfg: dict) -> list[str]:
    """Table 2's largest entry, the pseudo-dimension ε^(−(min(d1,d2)+d1+d2)/(2β)) at the smallest
    ε, must be a float64 (below 10^300), not inf."""
    th = cfg["theory"]
    exponent = (min(th["d1"], th["d2"]) + th["d1"] + th["d2"]) / (2 * th["beta"])
    log10 = exponent * -math.log10(min(th["eps"]))
    if log10 > 300:
        return [
            f"config key 'theory.eps': with theory.beta = {th['beta']:g}, theory.d1 = {th['d1']}, "
            f"theory.d2 = {th['d2']}, Table 2's pseudo-dimension at ε = {min(th['eps']):g} is "
            f"10^{log10:.0f}, beyond a float; allowed: theory.eps, theory.beta, theory.d1, "
            f"theory.d2 with (min(d1,d2) + d1 + d2)/(2β)·log10(1/ε) <= 300"
        ]
    return []


def dynamics_errors(cfg: dict) -> list[str]:
    dims = cfg["gmm"]["dims"]
    outside = [d for d in cfg["dynamics"].get("budget_dims", []) if d not in dims]
    if outside:
        return [
            f"config key 'dynamics.budget_dims': {outside} not in gmm.dims = {dims}; allowed: "
            f"a subset of gmm.dims"
        ]
    return []


def cross_key_errors(cfg: dict) -> list[str]:
    """Constraints between keys that a JSON schema cannot express cleanly."""
    checks = (gmm_errors, train_errors, lcgm_errors, noise_errors, sample_size_errors)
    checks += (theory_errors, dynamics_errors, widths_errors, smoothness_errors)
    return [msg for check in (*checks, digits_errors) for msg in check(cfg)]
