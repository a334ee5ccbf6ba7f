# The claims table (every experiment's claims) and the HTML report, their inputs read from the
# experiments' declarations (crl_approx.config.experiments; each rules file declares its own).


#: the report's figures: input name → the plot rule that draws it (the report's inputs, its figure
#: list and each caption's rule and tables come from here)
REPORT_FIGURES = EXPERIMENTS.figures()
#: the docs pages the report's sections link, in the report's order (its appendix carries them)
REPORT_DOCS_PAGES = EXPERIMENTS.docs()
#: the claims table's sources: its builders' name for a table → the provenance registry's
#: (render/provenance.py), whose config keys each claims row names
CLAIM_SOURCES = EXPERIMENTS.claim_sources()
#: the provenance registry, derived: every declared table by its file's stem → (file, the rule
#: that writes it); its config keys are those whose change reruns that rule (config/reruns.yaml)
PROVENANCE = EXPERIMENTS.provenance(writer)
PROVENANCE_TABLES = provenance_tables(PROVENANCE)


rule assemble_claims:
    """Every experiment's claims in one table: the summary of the report and README reads it."""
    input:
        **EXPERIMENTS.claim_inputs(),
        **EXPERIMENTS.own_claims(),
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
        }
        | EXPERIMENTS.own_keys(),
        docs=EXPERIMENTS.section_docs(),
    script:
        "../scripts/assemble_claims.py"


rule build_report:
    """The self-contained HTML report: every table and figure beside the paper's numbers."""
    input:
        **{name: plot.output.figure for name, plot in REPORT_FIGURES.items()},
        **EXPERIMENTS.tables(),
        claims=rules.assemble_claims.output.table,
        paper=repo_path("workflow", "resources", "paper_values.yaml"),
        template=repo_path("report", "templates", "index.html.j2"),
        # the docs pages the sections link, carried in the report's appendix (render/pages.py)
        docs=REPORT_DOCS_PAGES,
        # the sections printed from an experiment's own template
        partials=[p["template"] for p in EXPERIMENTS.partials()],
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
        partials=[
            p | {"rules": {n: writer(EXPERIMENTS.tables()[n]) for n in p["tables"]}}
            for p in EXPERIMENTS.partials()
        ],
        sources=PROVENANCE,
        figure_sources={
            name: figure_source(plot) for name, plot in REPORT_FIGURES.items()
        },
    script:
        "../scripts/build_report.py"


experiment("report", local=["assemble_claims", "build_report"])
