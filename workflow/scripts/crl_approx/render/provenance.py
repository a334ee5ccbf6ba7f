"""Per-number provenance for the report: where each printed number comes from.

Every numeric cell of the report carries a ``title`` (shown on hover, offline, without script):

    source: results/tables/table1.csv; column: spectral_tail; row: D=4; rule: assemble_table1;
    config: tau=0.5, gmm.mu_x=1.2, …

(``source``, ``column`` and ``row`` find the stored number; ``rule`` is the rule that wrote the
file; ``config`` the keys, with their values, it depends on). The paper's numbers name
workflow/resources/paper_values.yaml and their key; numbers computed in the report from stored
ones say ``derived:``. tests/e2e/test_report_provenance.py follows the sources back to the files.
"""

from __future__ import annotations

from functools import reduce

import yaml

from ..config.reruns import MAP


def depends_on(rule: str, reruns: dict) -> tuple[str, ...]:
    """The config keys a rule's outputs depend on: those whose change reruns it (the rerun map,
    config/reruns.yaml: each key's ``reruns``, its readers and everything downstream of them).
    The granularity is the rule's: a rule writing several tables names the same keys for each
    (assemble_smoothness's worlds also name the trained cells' keys)."""
    return tuple(sorted(k for k, v in reruns.items() if rule in (v.get("reruns") or ())))


RERUNS = yaml.safe_load(MAP.read_text())


def tables(sources: dict, reruns: dict | None = None) -> dict:
    """The provenance registry: table → (file, the rule that writes it, the config keys its
    numbers depend on). ``sources`` (table → (file, rule)) is derived from the experiments'
    declarations (``Registry.provenance``; the build_report rule passes it); the keys from the
    rerun map (:func:`depends_on`)."""
    reruns = RERUNS if reruns is None else reruns
    return {name: (path, rule, depends_on(rule, reruns)) for name, (path, rule) in sources.items()}


PAPER = "workflow/resources/paper_values.yaml"
#: the title of Table 2's formula cells
FORMULA_SRC = "source: workflow/scripts/crl_approx/numerics/theory.py (FORMULAS); rule: "
FORMULA_SRC += "compute_theory_sizes; config: theory"


def _value(config: dict, dotted: str):
    return reduce(lambda d, k: d[k], dotted.split("."), config)


class Sources:
    """``src(table, column, **row)``: the title of one printed number (see the module doc)."""

    def __init__(self, config: dict, sources: dict):
        self.config = config
        self.tables = tables(sources)

    def config_text(self, keys) -> str:
        return ", ".join(f"{k}={_value(self.config, k)}" for k in keys)

    def __call__(self, table: str, column: str, **row) -> str:
        path, rule, keys = self.tables[table]
        return self.title(path, rule, keys, column, **row)

    def title(self, path: str, rule: str, keys, column: str, **row) -> str:
        """The title of one number of ``path`` (written by ``rule``, depending on ``keys``): a
        table outside the registry (an experiment of your own's) is titled the same way."""
        key = ", ".join(f"{k}={v}" for k, v in row.items())
        parts = [f"source: {path}", f"column: {column}"]
        if key:
            parts.append(f"row: {key}")
        parts += [f"rule: {rule}", f"config: {self.config_text(keys)}"]
        return "; ".join(parts)

    @staticmethod
    def paper(key: str) -> str:
        """A number the paper prints, by its key in paper_values.yaml."""
        return f"source: {PAPER}; key: {key}; the paper's printed value"

    @staticmethod
    def derived(text: str) -> str:
        return f"derived: {text}"


def figure_sources(sources: dict, outputs: dict) -> dict:
    """Per figure: its plot rule and what it reads (``sources``, derived from the rules by the
    build_report rule), its file and the command that regenerates it."""
    return {
        name: {
            "rule": src["rule"],
            "tables": src["reads"],
            "path": outputs[name],
            "command": f"snakemake --cores all --forcerun {src['rule']} {outputs[name]}",
        }
        for name, src in sources.items()
    }
