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
- ``widths``: Experiment W's predictions W1–W7 (W5 the paper's Table 2, read on dimensions).
- ``smoothness``: Experiment S's claims (its assembly writes them as a claims table; here its
  rows are grouped one claim per row, a world per part).

An experiment of your own writes its claims table itself (:func:`own` reads it); :func:`run`
appends it (crl_approx.config.experiments: ``claims_table``).

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


#: an experiment's own claims table (its assembly writes it in the schema): the input's prefix
OWN = "own_"
#: the columns an experiment's own table may leave out (its keys are its declaration's; a claim of
#: one row needs no claim/part, a decided one no why)
OPTIONAL = ("keys", "claim", "part", "why")


def own(path, name: str, keys=()) -> list[dict]:
    """An experiment's own claims table as claims rows: every schema column (``keys`` from its
    declaration), the verdict and kind validated, its section and source table named; a table
    missing a column or with a verdict outside :class:`~crl_approx.numerics.claims.Verdict` is
    refused, naming the file."""
    from ...numerics.claims import Kind, row

    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    needed = [c for c in COLUMNS if c not in OPTIONAL] + ["section"]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: not a claims table, missing columns {missing}")
    out = []
    for r in table.to_dict("records"):
        try:
            Kind(r["kind"])
            made = row(**{c: r.get(c, "") for c in COLUMNS if c != "keys"})
        except (ValueError, KeyError) as err:
            raise ValueError(f"{path}: claim {r['id']!r}: {err}") from None
        made.update(
            section=r["section"],
            parts=r.get("parts", ""),
            part_counts=r.get("part_counts", ""),
            table=name,
            keys=", ".join(keys),
        )
        out.append(made)
    return out


def _page(path: str) -> str:
    """A docs page as the summary links it: docs/<name> for the project's pages (never a path of
    this host), the file's name for others."""
    import os

    if not path:
        return ""
    name = os.path.basename(path)
    return f"docs/{name}" if os.path.basename(os.path.dirname(path)) == "docs" else name


def run(inputs, params, output) -> pd.DataFrame:
    """The ``assemble_claims`` rule: the claims of every experiment, from its tables, then the
    experiments' own claims tables (inputs ``own_<key>``); each row names its section's docs
    page (``params.docs``: section → page)."""
    from ...runtime import write_csv

    names = [n for n in inputs.keys() if not n.startswith(OWN)]
    t = Tables(".", {name: getattr(inputs, name) for name in names})
    table = collect(t, params.config, params.provenance)
    extra = [
        r
        for n in inputs.keys()
        if n.startswith(OWN)
        for r in own(getattr(inputs, n), n, params.provenance.get(n, ()))
    ]
    if extra:
        table = pd.concat([table, pd.DataFrame(extra, columns=table.columns)], ignore_index=True)
    table["docs"] = [_page(params.docs.get(s, "")) for s in table["section"]]
    write_csv(table, output.table)
    return table
