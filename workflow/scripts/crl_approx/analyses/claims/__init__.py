"""The project's claims in one table (issue 34): every experiment's claims in the schema of
:mod:`crl_approx.numerics.claims`, built from the tables the experiment's rules write, one row per
claim, read by the summary (the report's and README's) and nothing else downstream.

Modules, one per experiment, each with ``claims(t, config) -> list[dict]`` (rows of
:func:`crl_approx.numerics.claims.row`, plus the row's ``section`` and ``parts``):

- ``base``: the run's tables by name, a tier as a verdict, short phrases, a compound claim's parts.
- ``paper``: the paper's own claims: Table 1 (exact cells, trained cells per objective), the
  truncation relation, the LCGM probes and saturation, the noise exponent μ̂.
- ``dynamics``: the training-dynamics predictions 1–3 (mixture and LCGM).
- ``digits``: Experiment R's predictions.
- ``widths``: Experiment W's predictions W1–W3.
- ``smoothness``: Experiment S's claims (its assembly writes them as a claims table; here its
  rows are grouped one claim per row, a world per part).

:data:`EXPERIMENTS` orders them; :func:`collect` writes the table.
"""

from __future__ import annotations

import pandas as pd

from ...numerics.claims import COLUMNS
from . import digits, dynamics, paper, smoothness, widths
from .base import EXTRA, Tables

#: the experiments' claim builders, in the summary's order
EXPERIMENTS = (paper, smoothness, dynamics, digits, widths)


def collect(t: Tables, config: dict, keys: dict[str, tuple], experiments=EXPERIMENTS):
    """Every experiment's claims, one row each; a row's ``keys`` are the config keys its source
    table depends on (``keys``: table → keys, the provenance registry)."""
    rows = [r for module in experiments for r in module.claims(t, config)]
    for r in rows:
        r["keys"] = ", ".join(keys.get(r["table"], ()))
    return pd.DataFrame(rows, columns=[*COLUMNS, *EXTRA])


#: the claims builders' tables: the rule's input name → the name the builders read
INPUTS = (
    "table1",
    "spectrum",
    "sample_size",
    "lcgm_probes",
    "lcgm_elbow",
    "noise_exponent",
    "dynamics",
    "dynamics_lcgm",
    "digits_verdicts",
    "digits_elbow",
    "widths",
    "widths_verdicts",
    "smoothness_claims",
)


def run(inputs, params, output) -> pd.DataFrame:
    """The ``assemble_claims`` rule: the claims of every experiment, from its tables."""
    from ...runtime import write_csv

    t = Tables(".", {name: getattr(inputs, name) for name in INPUTS})
    table = collect(t, params.config, params.provenance)
    write_csv(table, output.table)
    return table
