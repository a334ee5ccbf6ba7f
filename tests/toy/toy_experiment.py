"""The toy experiment's package module: per seed the mean of n standard normals, and one
pre-registered claim, |mean| ≤ 4/√n for every seed (it holds with probability > 0.9999 per seed),
written in the claims schema (crl_approx.numerics.claims)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from crl_approx.numerics.claims import COLUMNS, How, Kind, Verdict


def means(n: int, seeds) -> pd.DataFrame:
    rows = [
        {"seed": s, "n": n, "mean": float(np.random.default_rng(s).standard_normal(n).mean())}
        for s in seeds
    ]
    return pd.DataFrame(rows)


def claims(table: pd.DataFrame) -> pd.DataFrame:
    n = int(table["n"].iloc[0])
    bound = 4 / math.sqrt(n)
    worst = float(table["mean"].abs().max())
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        id="toy-mean",
        statement="Toy: the sample mean is within 4/√n of 0",
        kind=str(Kind.PREDICTION),
        registered="2026-12-02",
        how=str(How.EXACT),
        measured=f"max |mean| {worst:.3g}",
        value=worst,
        paper="—",
        verdict=str(Verdict.HOLDS if worst <= bound else Verdict.FAILS),
        reading=f"bound 4/√n = {bound:.3g} at n = {n}",
        source="toy: mean",
        section="toy",
    )
    del row["keys"]
    return pd.DataFrame([row])


def assemble(config: dict, table_path: str, claims_path: str) -> None:
    """The rule's job: ``config`` holds extra_experiments.toy.params.n and seeds."""
    n = config["extra_experiments"]["toy"]["params"]["n"]
    table = means(n, config["seeds"])
    table.to_csv(table_path, index=False)
    claims(table).to_csv(claims_path, index=False)
