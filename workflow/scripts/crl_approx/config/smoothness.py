"""Cross-key rules of Experiment S's section (``smoothness``)."""

from __future__ import annotations


def smoothness_errors(cfg: dict) -> list[str]:
    s = cfg["smoothness"]
    errors = []

    def bad(key: str, what: str, allowed: str) -> None:
        errors.append(f"config key 'smoothness.{key}': {what}; allowed: {allowed}")

    if s["panels_low"] >= s["panels"]:
        bad("panels_low", f"{s['panels_low']} >= panels = {s['panels']}", "fewer than panels")
    outside = [b for b in s["trained"] if b not in s["betas"]]
    if outside:
        bad("trained", f"{outside} not in betas = {s['betas']}", "a subset of smoothness.betas")
    if s["max_dim"] > s["n_eigenvalues"]:
        bad(
            "max_dim",
            f"{s['max_dim']} > n_eigenvalues = {s['n_eigenvalues']}",
            "max_dim <= smoothness.n_eigenvalues",
        )
    if s["fit_from"] + 4 > s["n_eigenvalues"]:
        bad(
            "fit_from",
            f"{s['fit_from']} leaves fewer than 4 eigenvalues to fit",
            "fit_from <= smoothness.n_eigenvalues − 4",
        )
    if max(s["dims"]) > s["max_dim"]:
        bad("dims", f"{max(s['dims'])} > max_dim = {s['max_dim']}", "D <= smoothness.max_dim")
    if s["alpha_from_dim"] > s["max_dim"]:
        bad(
            "alpha_from_dim",
            f"{s['alpha_from_dim']} > max_dim = {s['max_dim']}",
            "alpha_from_dim <= smoothness.max_dim",
        )
    if list(s["eps"]) != sorted(s["eps"], reverse=True):
        bad("eps", f"{s['eps']} is not decreasing", "a decreasing ladder")
    return errors
