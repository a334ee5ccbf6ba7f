# Table 2 (theory), the figures (one plot rule each, reading cached tables) and the HTML report.


rule compute_theory_sizes:
    """Table 2: the network sizes the theory prescribes for each ε."""
    output:
        table=reported(
            "results/tables/table2.csv",
            caption="../../report/captions/table2_table.rst",
            category=REPORT["table2"],
        ),
    log:
        "logs/compute_theory_sizes/table2.log",
    benchmark:
        "benchmarks/compute_theory_sizes/table2.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime="5m",
    params:
        theory=lookup(dpath="theory", within=config),
    script:
        "../scripts/compute_theory_sizes.py"


rule plot_eigenvalues:
    """Figure: the mixture's PMI-operator eigenvalues."""
    input:
        eigenvalues=rules.compute_spectrum.output.eigenvalues,
        spectrum=rules.compute_spectrum.output.spectrum,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/eigenvalues.svg",
            caption="../../report/captions/eigenvalues.rst",
            category=REPORT["table1"],
        ),
    log:
        "logs/plot_eigenvalues/eigenvalues.log",
    benchmark:
        "benchmarks/plot_eigenvalues/eigenvalues.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="eigenvalues",
    script:
        "../scripts/plot.py"


rule plot_excess:
    """Figure: Table 1's excess risk against D (truncation, floor, MLPs, paper)."""
    input:
        table1=rules.assemble_table1.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/excess_vs_d.svg",
            caption="../../report/captions/excess.rst",
            category=REPORT["table1"],
        ),
    log:
        "logs/plot_excess/excess_vs_d.log",
    benchmark:
        "benchmarks/plot_excess/excess_vs_d.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="excess",
    script:
        "../scripts/plot.py"


rule plot_training_curves:
    """Figure: Table 1's training curves."""
    input:
        metrics=encoder_files("gmm", table1_runs(), "metrics.json"),
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/training_curves.svg",
            caption="../../report/captions/training.rst",
            category=REPORT["table1"],
        ),
    log:
        "logs/plot_training_curves/training_curves.log",
    benchmark:
        "benchmarks/plot_training_curves/training_curves.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="training",
    script:
        "../scripts/plot.py"


rule plot_theory_sizes:
    """Figure: Table 2's prescribed network sizes against ε."""
    input:
        table2=rules.compute_theory_sizes.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/theory_sizes.svg",
            caption="../../report/captions/theory.rst",
            category=REPORT["table2"],
        ),
    log:
        "logs/plot_theory_sizes/theory_sizes.log",
    benchmark:
        "benchmarks/plot_theory_sizes/theory_sizes.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="theory",
    script:
        "../scripts/plot.py"


# The report's figures, in its order: input name → the plot rule that draws it. The report's
# inputs, its figure list and each caption's rule and tables all come from here.
REPORT_FIGURES = {
    "fig_eigenvalues": rules.plot_eigenvalues,
    "fig_excess": rules.plot_excess,
    "fig_training": rules.plot_training_curves,
    "fig_theory": rules.plot_theory_sizes,
    "fig_lcgm_probes": rules.plot_lcgm_probes,
    "fig_lcgm_cancorr": rules.plot_lcgm_cancorr,
    "fig_lcgm_features": rules.plot_lcgm_features,
    "fig_noise": rules.plot_noise_exponent,
    "fig_calibration": rules.plot_calibration,
    "fig_cosine": rules.plot_cosine,
    "fig_sample_size": rules.plot_sample_size,
    "fig_dynamics_alignment": rules.plot_dynamics_alignment,
    "fig_dynamics_directions": rules.plot_dynamics_directions,
    "fig_dynamics_order": rules.plot_dynamics_order,
    "fig_digits": rules.plot_digits,
    "fig_dynamics_lcgm": rules.plot_dynamics_lcgm,
    "fig_widths": rules.plot_widths,
    "fig_smoothness": rules.plot_smoothness,
}


#: the docs pages the report's sections link (its template's docs_page calls, in order;
#: tests/unit/test_report_helpers.py keeps the two in step)
REPORT_DOCS_PAGES = [
    "table1.md",
    "sample_size.md",
    "lcgm.md",
    "noise.md",
    "calibration.md",
    "experiment_r.md",
    "dynamics.md",
    "cosine.md",
    "widths.md",
    "smoothness.md",
]


# The claims table's sources: its builders' name for a table → the provenance registry's
# (render/provenance.py), whose config keys each claims row names.
CLAIM_SOURCES = {
    "table1": "table1",
    "spectrum": "crosschecks",
    "sample_size": "sample_size",
    "lcgm_probes": "lcgm_probes",
    "lcgm_elbow": "lcgm_elbow",
    "noise_exponent": "noise",
    "dynamics": "dynamics",
    "dynamics_lcgm": "dynamics_lcgm",
    "digits_verdicts": "digits_verdicts",
    "digits_elbow": "digits_elbow",
    "widths": "widths",
    "widths_verdicts": "widths_verdicts",
    "smoothness_claims": "smoothness_claims",
}


rule assemble_claims:
    """Every experiment's claims in one table: the summary of the report and README reads it."""
    input:
        table1=rules.assemble_table1.output.table,
        spectrum=rules.compute_spectrum.output.spectrum,
        sample_size=rules.assemble_sample_size.output.table,
        lcgm_probes=rules.assemble_lcgm.output.table,
        lcgm_elbow=rules.assemble_lcgm.output.elbow,
        noise_exponent=rules.assemble_noise.output.table,
        dynamics=rules.measure_dynamics.output.table,
        dynamics_lcgm=rules.measure_dynamics_lcgm.output.table,
        digits_verdicts=rules.assemble_digits.output.verdicts,
        digits_elbow=rules.assemble_digits.output.elbow,
        widths=rules.assemble_widths.output.table,
        widths_verdicts=rules.assemble_widths.output.verdicts,
        smoothness_claims=rules.assemble_smoothness.output.claims,
    output:
        table=reported(
            "results/tables/claims.csv",
            caption="../../report/captions/claims_table.rst",
            category=REPORT["report"],
        ),
    log:
        "logs/assemble_claims/claims.log",
    benchmark:
        "benchmarks/assemble_claims/claims.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        config=subset(
            config,
            (
                "tau",
                "train.default_objective",
                "train.width",
                "lcgm.K",
                "dynamics.alignment_tol",
                "widths.gmm_objective",
                "widths.gmm_dim",
            ),
        ),
        provenance={
            name: PROVENANCE_TABLES[table][2] for name, table in CLAIM_SOURCES.items()
        },
    script:
        "../scripts/assemble_claims.py"


rule build_report:
    """The self-contained HTML report: every table and figure beside the paper's numbers."""
    input:
        **{name: plot.output.figure for name, plot in REPORT_FIGURES.items()},
        table1=rules.assemble_table1.output.table,
        table2=rules.compute_theory_sizes.output.table,
        spectrum=rules.compute_spectrum.output.spectrum,
        crosschecks=rules.compute_spectrum.output.crosschecks,
        lcgm_table=rules.assemble_lcgm.output.table,
        lcgm_elbow=rules.assemble_lcgm.output.elbow,
        lcgm_design=rules.check_lcgm_design.output.design,
        noise_table=rules.assemble_noise.output.table,
        calibration_table=rules.measure_calibration.output.table,
        calibration_points=rules.measure_calibration.output.points,
        dynamics_table=rules.measure_dynamics.output.table,
        dynamics_lcgm_table=rules.measure_dynamics_lcgm.output.table,
        cosine_table=rules.assemble_cosine.output.table,
        sample_size_table=rules.assemble_sample_size.output.table,
        sample_size_fits=rules.assemble_sample_size.output.fits,
        digits_sweep=rules.assemble_digits.output.sweep,
        digits_elbow=rules.assemble_digits.output.elbow,
        digits_verdicts=rules.assemble_digits.output.verdicts,
        digits_table1=rules.assemble_digits.output.table1,
        digits_cancorr=rules.assemble_digits.output.cancorr,
        digits_classes=rules.compute_digits_operator.output.table,
        widths_table=rules.assemble_widths.output.table,
        widths_eps=rules.assemble_widths.output.eps,
        widths_fits=rules.assemble_widths.output.fits,
        widths_verdicts=rules.assemble_widths.output.verdicts,
        smoothness_worlds=rules.assemble_smoothness.output.worlds,
        smoothness_eps=rules.assemble_smoothness.output.eps,
        smoothness_trained=rules.assemble_smoothness.output.trained,
        smoothness_claims=rules.assemble_smoothness.output.claims,
        claims=rules.assemble_claims.output.table,
        paper=repo_path("workflow", "resources", "paper_values.yaml"),
        template=repo_path("report", "templates", "index.html.j2"),
        # the docs pages the sections link, carried in the report's appendix (render/pages.py)
        docs=[repo_path("docs", page) for page in REPORT_DOCS_PAGES],
        css=repo_path("report", "style.css"),
        code=[
            repo_path("workflow", "scripts", "crl_approx", "render", name)
            for name in (
                "html.py",
                "sections.py",
                "summary.py",
                "study.py",
                "provenance.py",
                "pages.py",
                "verdicts.py",
                "dynamics.py",
                "digits.py",
                "widths.py",
                "smoothness.py",
                "glance.py",
            )
        ],
    output:
        html=reported(
            "results/report/index.html",
            caption="../../report/captions/report.rst",
            category=REPORT["report"],
        ),
        # the configuration the report describes: `snakemake --report` refuses another one
        config="results/report/config.yaml",
    log:
        "logs/build_report/index.log",
    benchmark:
        "benchmarks/build_report/index.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        config=config,
        figures=list(REPORT_FIGURES),
        figure_sources={
            name: figure_source(plot) for name, plot in REPORT_FIGURES.items()
        },
    script:
        "../scripts/build_report.py"
