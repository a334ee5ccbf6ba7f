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

GMM = ("gmm.mu_x", "gmm.sigma_x", "gmm.mu_y", "gmm.sigma_y", "gmm.prior")
TRAIN = ("train.width", "train.depth", "train.lr", "train.weight_decay", "train.schedule")
TRAIN += ("train.epochs", "train.batch_size")
LCGM = ("lcgm.K", "lcgm.d_x", "lcgm.d_y", "lcgm.mean_x", "lcgm.sigma_x", "lcgm.mean_y")
LCGM += ("lcgm.sigma_y", "lcgm.design_seed")

#: table → (file, the rule that writes it, the config keys its numbers depend on)
TABLES = {
    "table1": (
        "results/tables/table1.csv",
        "assemble_table1",
        (
            *("tau", *GMM, "gmm.quadrature_nodes", "train.objectives", "train.default_objective"),
            *("train.score", *TRAIN, "train.population_nodes", "train.population_steps"),
            *("gmm.n_train", "seeds"),
        ),
    ),
    "crosschecks": (
        "results/gmm/crosschecks.csv",
        "compute_spectrum",
        ("tau", *GMM, "gmm.quadrature_nodes"),
    ),
    "table2": (
        "results/tables/table2.csv",
        "compute_theory_sizes",
        ("theory.eps", "theory.d1", "theory.d2", "theory.beta", "theory.K"),
    ),
    "lcgm_probes": (
        "results/tables/lcgm_probes.csv",
        "assemble_lcgm",
        (
            *("tau", *LCGM, "lcgm.dims", "lcgm.n_train", "lcgm.n_candidates"),
            "train.score",
            *TRAIN,
            "seeds",
        ),
    ),
    "lcgm_elbow": (
        "results/tables/lcgm_elbow.csv",
        "assemble_lcgm",
        ("lcgm.dims", "lcgm.elbow_fraction", "seeds"),
    ),
    "noise": (
        "results/tables/noise_exponent.csv",
        "assemble_noise",
        (
            "noise.scheme",
            "noise.n_samples",
            "noise.window",
            "noise.n_bootstrap",
            "noise.ci_level",
            "noise.min_count",
            "seeds",
        ),
    ),
    "calibration": (
        "results/tables/calibration.csv",
        "measure_calibration",
        (
            "tau",
            *GMM,
            "calibration.truncation_max_rank",
            "calibration.min_excess",
            "calibration.n_bootstrap",
            "calibration.ci_level",
            "noise.window",
            "seeds",
        ),
    ),
    "dynamics": (
        "results/tables/dynamics.csv",
        "measure_dynamics",
        (
            "tau",
            *GMM,
            "train.objectives",
            *TRAIN,
            "dynamics.early_steps",
            "dynamics.capture_threshold",
            "dynamics.learned_min",
            "dynamics.coefficient_fraction",
            "dynamics.decompose_steps",
            "dynamics.alignment_tol",
            "dynamics.rho_holds",
            "seeds",
        ),
    ),
    "dynamics_lcgm": (
        "results/tables/dynamics_lcgm.csv",
        "measure_dynamics_lcgm",
        (
            "tau",
            "lcgm.K",
            "lcgm.dims",
            "lcgm.n_checkpoint",
            *TRAIN,
            "dynamics.early_steps",
            "dynamics.alignment_tol",
            "seeds",
        ),
    ),
    "cosine": (
        "results/tables/cosine_ablation.csv",
        "assemble_cosine",
        (
            "tau",
            *GMM,
            "ablation.scores",
            "train.default_objective",
            "train.cosine_scale",
            "train.cosine_scale_learnable",
            *TRAIN,
            "seeds",
        ),
    ),
    "sample_size": (
        "results/tables/sample_size.csv",
        "assemble_sample_size",
        (
            "tau",
            *GMM,
            "sample_size.pools",
            "sample_size.fresh",
            "sample_size.budget_multipliers",
            "sample_size.other_lrs",
            "gmm.n_train",
            "train.score",
            *TRAIN,
            "seeds",
        ),
    ),
    "sample_size_fits": (
        "results/tables/sample_size_fits.csv",
        "assemble_sample_size",
        ("sample_size.budget_dims", "sample_size.ci_level", "train.lr", "seeds"),
    ),
}
DIGITS = ("tau", "seeds", "digits.split_seed", "digits.train_fraction", "digits.val_fraction")
DIGITS += ("digits.groupings", "digits.keep_max", "digits.keep_min", "digits.steps")
DIGITS += ("digits.halves_steps", "digits.batch_size", "digits.checkpoints", *TRAIN[:5])
TABLES |= {
    "digits_sweep": ("results/tables/digits_sweep.csv", "assemble_digits", DIGITS),
    "digits_elbow": ("results/tables/digits_elbow.csv", "assemble_digits", DIGITS),
    "digits_verdicts": ("results/tables/digits_verdicts.csv", "assemble_digits", DIGITS),
    "digits_table1": ("results/tables/digits_table1.csv", "assemble_digits", DIGITS),
    "digits_cancorr": (
        "results/tables/digits_cancorr.csv",
        "assemble_digits",
        ("digits.split_seed", "digits.train_fraction"),
    ),
    "digits_class_operator": (
        "results/tables/digits_class_operator.csv",
        "compute_digits_operator",
        ("tau", "digits.groupings", "digits.keep_max", "digits.keep_min"),
    ),
}
WIDTHS = ("tau", "seeds", "widths.grid", "widths.towers", "widths.gmm_dim", "widths.gmm_objective")
WIDTHS += ("lcgm.K", "train.score", *TRAIN, "train.population_steps")
TABLES |= {
    name: (f"results/tables/{name}.csv", "assemble_widths", WIDTHS + extra)
    for name, extra in (
        ("widths", ()),
        ("widths_eps", ("widths.eps", "widths.gmm_eps")),
        ("widths_fits", ("widths.eps", "widths.gmm_eps", "widths.ci_level", "theory.beta")),
        ("widths_verdicts", ("widths.eps", "widths.ci_level", "widths.data_check")),
    )
}
# Experiment S: the spectra (compute_smoothness), the floors (compute_smoothness_floor) and the
# trained cells (train_smoothness: the default towers, inner score, population objective)
SPECTRUM = tuple(f"smoothness.{k}" for k in ("betas", "mutual_information", "panels", "panels_low"))
SPECTRUM += tuple(f"smoothness.{k}" for k in ("order", "growth", "n_eigenvalues", "tolerance"))
SPECTRUM += ("tau", "smoothness.fit_from", "smoothness.max_dim", "smoothness.eps")
SPECTRUM += ("smoothness.alpha_from_dim",)
FLOOR = ("smoothness.dims", "smoothness.floor_panels")
TRAINED = ("tau", "seeds", "smoothness.mutual_information", "smoothness.order", "smoothness.growth")
TRAINED += ("smoothness.trained", "smoothness.train_panels", *FLOOR, *TRAIN[:6])
TRAINED += ("train.max_loss", "train.population_steps")
TABLES |= {
    f"smoothness_{name}": (f"results/tables/smoothness_{name}.csv", "assemble_smoothness", keys)
    for name, keys in (
        ("worlds", SPECTRUM),
        ("eps", SPECTRUM + FLOOR),
        ("trained", TRAINED),
        ("claims", tuple(dict.fromkeys(SPECTRUM + FLOOR + TRAINED))),
    )
}
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
