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

#: table → (file, the rule that writes it); its config keys are derived (:func:`depends_on`)
SOURCES = {
    "table1": ("results/tables/table1.csv", "assemble_table1"),
    "crosschecks": ("results/gmm/crosschecks.csv", "compute_spectrum"),
    "table2": ("results/tables/table2.csv", "compute_theory_sizes"),
    "lcgm_probes": ("results/tables/lcgm_probes.csv", "assemble_lcgm"),
    "lcgm_elbow": ("results/tables/lcgm_elbow.csv", "assemble_lcgm"),
    "noise": ("results/tables/noise_exponent.csv", "assemble_noise"),
    "calibration": ("results/tables/calibration.csv", "measure_calibration"),
    "dynamics": ("results/tables/dynamics.csv", "measure_dynamics"),
    "dynamics_lcgm": ("results/tables/dynamics_lcgm.csv", "measure_dynamics_lcgm"),
    "cosine": ("results/tables/cosine_ablation.csv", "assemble_cosine"),
    "sample_size": ("results/tables/sample_size.csv", "assemble_sample_size"),
    "sample_size_fits": ("results/tables/sample_size_fits.csv", "assemble_sample_size"),
    "digits_class_operator": (
        "results/tables/digits_class_operator.csv",
        "compute_digits_operator",
    ),
}
SOURCES |= {
    f"digits_{n}": (f"results/tables/digits_{n}.csv", "assemble_digits")
    for n in ("sweep", "elbow", "verdicts", "table1", "cancorr")
}
SOURCES |= {
    n: (f"results/tables/{n}.csv", "assemble_widths")
    for n in ("widths", "widths_eps", "widths_fits", "widths_verdicts")
}
SOURCES |= {
    f"smoothness_{n}": (f"results/tables/smoothness_{n}.csv", "assemble_smoothness")
    for n in ("worlds", "eps", "trained", "claims")
}


def depends_on(rule: str, reruns: dict) -> tuple[str, ...]:
    """The config keys a rule's outputs depend on: those whose change reruns it (the rerun map,
    config/reruns.yaml: each key's ``reruns``, its readers and everything downstream of them).
    The granularity is the rule's: a rule writing several tables names the same keys for each
    (assemble_smoothness's worlds also name the trained cells' keys)."""
    return tuple(sorted(k for k, v in reruns.items() if rule in (v.get("reruns") or ())))


RERUNS = yaml.safe_load(MAP.read_text())
#: table → (file, the rule that writes it, the config keys its numbers depend on)
TABLES = {name: (path, rule, depends_on(rule, RERUNS)) for name, (path, rule) in SOURCES.items()}
PAPER = "workflow/resources/paper_values.yaml"
#: the title of Table 2's formula cells
FORMULA_SRC = "source: workflow/scripts/crl_approx/numerics/theory.py (FORMULAS); rule: "
FORMULA_SRC += "compute_theory_sizes; config: theory"


def _value(config: dict, dotted: str):
    return reduce(lambda d, k: d[k], dotted.split("."), config)


class Sources:
    """``src(table, column, **row)``: the title of one printed number (see the module doc)."""

    def __init__(self, config: dict):
        self.config = config

    def config_text(self, keys) -> str:
        return ", ".join(f"{k}={_value(self.config, k)}" for k in keys)

    def __call__(self, table: str, column: str, **row) -> str:
        path, rule, keys = TABLES[table]
        return self.title(path, rule, keys, column, **row)

    def title(self, path: str, rule: str, keys, column: str, **row) -> str:
        """The title of one number of ``path`` (written by ``rule``, depending on ``keys``): a
        table outside :data:`TABLES` (an experiment of your own's) is titled the same way."""
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
