"""Table 2 of the paper: encoder sizes needed for approximation error ε (a theorem, not data).

Rates are evaluated without their constants and without the logarithmic factors hidden in Õ, for
the configured ε grid, input dimensions d1 (anchor x) and d2 (target y), Hölder smoothness β and,
for the latent-class model, K classes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the two rows of the paper's Table 2, as (column -> formula text) for the report
FORMULAS = {
    "general": {
        "D": "ε^(−min(d1,d2)/(2β))",
        "anchor_size": "ε^(−(4+2d1/d2)·min(d1,d2)/(8β))",
        "target_size": "ε^(−(4+2d2/d1)·min(d1,d2)/(8β))",
        "pseudo_dimension": "Õ(ε^(−(min(d1,d2)+d1+d2)/(2β)))",
    },
    "lcgm": {
        "D": "K",
        "anchor_size": "log²(1/ε)",
        "target_size": "ε^(−d2/(4β))",
        "pseudo_dimension": "Õ(ε^(−d2/(2β)))",
    },
}


def sizes(eps, d1: int, d2: int, beta: float, k: int) -> pd.DataFrame:
    """One row per (model, ε): D, anchor encoder L1·N1, target encoder L2·N2, pseudo-dimension."""
    eps = np.asarray(eps, float)
    m = min(d1, d2)
    general = pd.DataFrame(
        {
            "model": "general",
            "eps": eps,
            "D": eps ** (-m / (2 * beta)),
            "anchor_size": eps ** (-(4 + 2 * d1 / d2) * m / (8 * beta)),
            "target_size": eps ** (-(4 + 2 * d2 / d1) * m / (8 * beta)),
            "pseudo_dimension": eps ** (-(m + d1 + d2) / (2 * beta)),
        }
    )
    lcgm = pd.DataFrame(
        {
            "model": "lcgm",
            "eps": eps,
            "D": float(k),
            "anchor_size": np.log(1 / eps) ** 2,
            "target_size": eps ** (-d2 / (4 * beta)),
            "pseudo_dimension": eps ** (-d2 / (2 * beta)),
        }
    )
    return pd.concat([general, lcgm], ignore_index=True)


def run(theory: dict, output) -> pd.DataFrame:
    """The ``compute_theory_sizes`` rule."""
    from ..runtime import write_csv

    table = sizes(theory["eps"], theory["d1"], theory["d2"], theory["beta"], theory["K"])
    for key in ("d1", "d2", "beta", "K"):
        table[key] = theory[key]
    write_csv(table, output.table)
    return table
