# Table 2: the network sizes the theory prescribes (no training), and its figure.


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


experiment(
    "table2",
    tables={"table2": rules.compute_theory_sizes.output.table},
    figures={"fig_theory": rules.plot_theory_sizes},
    local=["compute_theory_sizes", "plot_theory_sizes"],
)
