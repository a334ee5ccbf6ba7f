"""The small statistics every analysis shares: the mean and sd over seeds of a group."""

from __future__ import annotations

import pandas as pd


def summarise(runs: pd.DataFrame, by, metrics) -> pd.DataFrame:
    """Per group of ``by``: the mean and sample standard deviation over seeds of each metric
    (``<metric>_mean``, ``<metric>_sd``) and the number of seeds (``n_seeds``)."""
    by = [by] if isinstance(by, str) else list(by)
    groups = runs.groupby(by, sort=True)
    agg = groups[list(metrics)].agg(["mean", "std"])
    agg.columns = [f"{metric}_{'sd' if stat == 'std' else stat}" for metric, stat in agg.columns]
    agg["n_seeds"] = groups["seed"].nunique()
    return agg.reset_index()
