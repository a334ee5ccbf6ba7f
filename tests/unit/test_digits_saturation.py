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


@pytest.mark.parametrize(
    ("label", "words"),
    [
        ("≥ 20", "no plateau within the sweep (D ≥ 20)"),
        ("unresolved (8–9)", "not resolved by the seeds (somewhere in D = 8–9)"),
        (
            "unresolved (≥ 8)",
            "not resolved by the seeds (somewhere at D ≥ 8, perhaps past the sweep)",
        ),
        ("≤ 1", "saturates at D ≤ 1"),
        ("4", "saturates at D 4"),
    ],
)
def test_a_saturation_label_reads_as_what_it_says(label, words):
    """A curve with no plateau is never said to saturate (review: "effective rank saturates at
    D ≥ 20"), an unresolved one names its range."""
    from crl_approx.render.digits import saturation_phrase

    text = saturation_phrase("heldout_excess", label)
    assert text.startswith("held-out excess") and text.endswith(words)
