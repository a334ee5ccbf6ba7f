# Experiment W: the excess against the hidden width of one tower at a time (the other at
# train.width), on the LCGM at D = K and on the mixture at widths.gmm_dim; the cell at train.width
# is the existing run of rule train_encoder (reused, never retrained). docs/widths.md.


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "widths_inputs.smk"


rule make_widths_data:
    """Experiment W: the LCGM's pairs of one seed with lcgm.n_train doubled (its data check)."""
    output:
        pairs="results/widths/data/{dataset}/seed~{seed}/pairs.npz",
    log:
        "logs/make_widths_data/{dataset}/seed~{seed}.log",
    benchmark:
        "benchmarks/make_widths_data/{dataset}/seed~{seed}.tsv"
    wildcard_constraints:
        dataset="lcgm",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        data=widths_doubled_data,
    script:
        "../scripts/make_widths_data.py"


# GPU-tagged like train_encoder; one job trains every seed of one cell as one stacked model.
rule train_widths:
    """Experiment W: train every seed of one (world, tower, width, data) cell (GPU-tagged)."""
    input:
        unpack(widths_inputs),
    output:
        model=widths_seed_files("model.pt"),
        metrics=widths_seed_files("metrics.json"),
        checkpoints=widths_seed_files("checkpoints.npz"),
    log:
        "logs/train_widths/{world}/tower~{tower}/width~{width}/data~{data}.log",
    benchmark:
        "benchmarks/train_widths/{world}/tower~{tower}/width~{width}/data~{data}.tsv"
    wildcard_constraints:
        world="gmm|lcgm",
        tower="f|g|both",
        width=r"\d+",
        data="1x|2x",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime="1h",
    params:
        data=widths_data_params,
        train=widths_train_params,
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
        dim=widths_dim_param,
        objective=widths_objective_param,
        steps=widths_steps,
    script:
        "../scripts/train_widths.py"


rule assemble_widths:
    """Experiment W: its tables (per cell, width to ε, fits, verdicts)."""
    input:
        metrics=widths_files(),
        probes=widths_probes(),
    output:
        table=reported(
            "results/tables/widths.csv",
            caption="../../report/captions/widths_table.rst",
            category=REPORT["widths"],
        ),
        eps=reported(
            "results/tables/widths_eps.csv",
            caption="../../report/captions/widths_eps_table.rst",
            category=REPORT["widths"],
        ),
        fits=reported(
            "results/tables/widths_fits.csv",
            caption="../../report/captions/widths_fits_table.rst",
            category=REPORT["widths"],
        ),
        verdicts=reported(
            "results/tables/widths_verdicts.csv",
            caption="../../report/captions/widths_verdicts_table.rst",
            category=REPORT["widths"],
        ),
        runs="results/tables/widths_runs.csv",
    log:
        "logs/assemble_widths/widths.log",
    benchmark:
        "benchmarks/assemble_widths/widths.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        widths=lookup(dpath="widths", within=config),
        cells=widths_cells(),
        seeds=lookup(dpath="seeds", within=config),
        default_width=lookup(dpath="train/width", within=config),
        theory=widths_theory(),
    script:
        "../scripts/assemble_widths.py"


rule plot_widths:
    """Experiment W: its figure."""
    input:
        table=rules.assemble_widths.output.table,
        fits=rules.assemble_widths.output.fits,
        eps=rules.assemble_widths.output.eps,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/widths.svg",
            caption="../../report/captions/widths.rst",
            category=REPORT["widths"],
        ),
    log:
        "logs/plot_widths/widths.log",
    benchmark:
        "benchmarks/plot_widths/widths.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="widths",
    script:
        "../scripts/plot.py"


experiment(
    "widths",
    tables={
        "widths_table": rules.assemble_widths.output.table,
        "widths_eps": rules.assemble_widths.output.eps,
        "widths_fits": rules.assemble_widths.output.fits,
        "widths_verdicts": rules.assemble_widths.output.verdicts,
    },
    figures={"fig_widths": rules.plot_widths},
    claims={
        "widths": (rules.assemble_widths.output.table, "widths"),
        "widths_verdicts": (rules.assemble_widths.output.verdicts, "widths_verdicts"),
    },
    docs=[repo_path("docs", "widths.md")],
    local=["make_widths_data", "assemble_widths", "plot_widths"],
    targets=[rules.assemble_widths.output],
)
