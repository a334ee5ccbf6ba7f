"""Experiment R's verdicts by the saturation rule, gated by convergence: a sweep built to saturate
at K − 1 holds; the same sweep with an early plateau fails on converged runs and is
"unresolved: not converged" on runs whose validation loss still falls (mutation caught: dropping
the gate turns the latter into "fails")."""

import numpy as np
import pandas as pd
import pytest

from crl_approx.analyses.digits_saturation import (
    convergence_cells,
    saturation_rows,
    saturation_verdicts,
)

K, DIMS = 5, [2, 3, 4, 5, 6, 10]


def runs(saturate_at=4):
    rng = np.random.default_rng(0)
    rows = []
    for d in DIMS:
        for s in range(3):
            e = rng.standard_normal(3) * 0.02
            rows.append(
                {
                    "pairing": "K5",
                    "K": K,
                    "D": d,
                    "seed": s,
                    "heldout_excess": (0.04 + 0.3 * max(0, saturate_at - d)) * (1 + e[0]),
                    "effective_rank": min(d, saturate_at) - 0.2 + e[1],
                    "effective_rank_variance": min(d, saturate_at) - 0.5 + e[2],
                }
            )
    return pd.DataFrame(rows)


def metrics(r, falling: bool):
    out = []
    for (d, s), _ in r.groupby(["D", "seed"]):
        slope = 0.05 if falling else 0.0
        val = [2.5 - slope * i for i in range(10)]
        out.append({"pairing": "K5", "D": d, "seed": s, "history": [{"val_loss": v} for v in val]})
    return out


def verdict(saturate_at, falling):
    r = runs(saturate_at)
    conv = convergence_cells(metrics(r, falling), r, tau=0.5)
    return saturation_verdicts(r, saturation_rows(r), conv).iloc[0]


def test_saturation_at_k_minus_1_holds_on_converged_runs():
    v = verdict(4, falling=False)
    assert (v["verdict"], v["verdict_excess"], v["converged"]) == ("holds", "holds", True)


def test_an_early_plateau_fails_only_when_the_runs_converged():
    assert verdict(2, falling=False)["verdict_excess"] == "fails"
    v = verdict(2, falling=True)
    assert not v["converged"] and v["verdict_excess"] == "unresolved: not converged"


def crafted(k: int, dims, excess, noise: float, ranks_ok: bool = True):
    """A per-seed runs table of pairing K<k> (3 seeds): ``excess(d)`` times (1 + noise·N(0, 1))
    per seed, effective ranks that saturate at k − 1 and stay ≤ k (or grow with D)."""
    rng = np.random.default_rng(k)
    rows = []
    for d in dims:
        for s in range(3):
            e = rng.standard_normal(3)
            rank = min(d, k - 1) if ranks_ok else d
            rows.append(
                {
                    "pairing": f"K{k}",
                    "K": k,
                    "D": d,
                    "seed": s,
                    "heldout_excess": excess(d) * (1 + noise * e[0]),
                    "effective_rank": rank - 0.2 + 0.01 * e[1],
                    "effective_rank_variance": rank - 0.5 + 0.01 * e[2],
                }
            )
    return pd.DataFrame(rows)


def verdicts_of(r, falling=False):
    hist = [
        {
            "pairing": p,
            "D": d,
            "seed": s,
            "history": [{"val_loss": 2.5 - (0.05 if falling else 0) * i} for i in range(10)],
        }
        for (p, d, s), _ in r.groupby(["pairing", "D", "seed"])
    ]
    conv = convergence_cells(hist, r, tau=0.5)
    return saturation_verdicts(r, saturation_rows(r), conv).set_index("pairing").iloc[0]


@pytest.mark.parametrize(("k", "dims"), [(3, [1, 2, 3, 4, 6]), (7, [4, 6, 7, 8, 12])])
def test_the_verdict_follows_the_per_seed_numbers(k, dims):
    """Groupings not in the default config (K = 3, 7). The same sweep, perturbed: flat from K − 1
    holds; an excess that keeps halving past K (far beyond 1 % seed noise) fails, or reads
    "unresolved: not converged" on runs still falling; a gentle slope (10 % per D) buried in 30 %
    seed noise is not a failure (a 15 % slope is: the trend check pools the Ds past D* and resolves
    it). Mutations caught (each seen failing): a prediction set not built from the
    pairing's own K (the default groupings' {9, 10}), dropping the convergence gate."""

    def flat(d):
        return 0.05 if d >= k - 1 else 0.05 + 0.1 * (k - 1 - d)

    def halving(d):
        return flat(d) * 0.5 ** max(0, d - (k - 1))

    v = verdicts_of(crafted(k, dims, flat, 0.01))
    assert (v["verdict"], v["verdict_excess"]) == ("holds", "holds")
    v = verdicts_of(crafted(k, dims, halving, 0.01))
    assert (v["verdict"], v["verdict_excess"]) == ("fails", "fails")
    assert verdicts_of(crafted(k, dims, halving, 0.01), falling=True)["verdict_excess"] == (
        "unresolved: not converged"
    )

    def gentle(d):
        return flat(d) * 0.9 ** max(0, d - (k - 1))

    assert verdicts_of(crafted(k, dims, gentle, 0.3))["verdict_excess"] != "fails"
    # the rank clause alone: an entropy rank that grows past K fails the full verdict
    v = verdicts_of(crafted(k, dims, flat, 0.01, ranks_ok=False))
    assert (v["verdict"], v["verdict_excess"]) == ("fails", "holds")
