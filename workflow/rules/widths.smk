# Experiment W: the excess against the hidden width of one tower at a time (the other at
# train.width), on the LCGM at D = K (a fresh stream; again at d_x = d_y = d for each d of
# widths.dim_sweep.dims) and on the mixture at widths.gmm_dim; each sweep's widest cell (both towers
# at train.width) is its floor's run: on the LCGM a trained cell (and again at twice the steps), on
# the mixture the existing run of rule train_encoder (reused, never retrained). docs/widths.md.


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "widths_inputs.smk"


# GPU-tagged like train_encoder. One job trains one sweep: every narrower width of one tower on one
# world, every seed of each width as one stacked model, width after width in one process (a job
# per width spent ~2.4 s of CPU each on starting Python and importing torch: 18 of Experiment W's
# 27 jobs before 1.12.0). The widest LCGM cell (both towers at train.width, and again at
# widths.budget_check × the steps) is a job of its own, which both towers' sweeps share.
rule train_widths:
    """Experiment W: one tower's sweep on an LCGM world, its narrower widths and seeds in one job (GPU-tagged)."""
    input:
        unpack(widths_inputs),
    output:
        model=widths_sweep_files("lcgm", "model.pt"),
        metrics=widths_sweep_files("lcgm", "metrics.json"),
        checkpoints=widths_sweep_files("lcgm", "checkpoints.npz"),
    log:
        "logs/train_widths/{world}/tower~{tower}/budget~{budget}.log",
    benchmark:
        "benchmarks/train_widths/{world}/tower~{tower}/budget~{budget}.tsv"
    wildcard_constraints:
        world=r"lcgm|lcgm_d\d+",
        tower="f|g",
        budget="1x|2x",
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
        tower=widths_tower_param,
        widths=widths_job_widths,
        budget=widths_budget_param,
    script:
        "../scripts/train_widths.py"


use rule train_widths as train_widths_gmm with:
    """Experiment W: one tower's sweep on the mixture, its narrower widths and seeds in one job (GPU-tagged)."""
    output:
        model=widths_sweep_files("gmm", "model.pt"),
        metrics=widths_sweep_files("gmm", "metrics.json"),
        checkpoints=widths_sweep_files("gmm", "checkpoints.npz"),
    log:
        "logs/train_widths_gmm/{world}/tower~{tower}/budget~{budget}.log",
    benchmark:
        "benchmarks/train_widths_gmm/{world}/tower~{tower}/budget~{budget}.tsv"
    wildcard_constraints:
        world="gmm",
        tower="f|g",
        budget="1x",


use rule train_widths as train_widths_widest with:
    """Experiment W: an LCGM world's widest cell (both towers at train.width), its floor (GPU-tagged)."""
    output:
        model=widths_widest_files("model.pt"),
        metrics=widths_widest_files("metrics.json"),
        checkpoints=widths_widest_files("checkpoints.npz"),
    log:
        "logs/train_widths_widest/{world}/budget~{budget}.log",
    benchmark:
        "benchmarks/train_widths_widest/{world}/budget~{budget}.tsv"
    wildcard_constraints:
        world=r"lcgm|lcgm_d\d+",
        budget="1x|2x",
    params:
        tower="both",
        widths=[config["train"]["width"]],


rule assemble_widths:
    """Experiment W: its tables (cells, floors, width to ε, fits, dimensions, verdicts)."""
    input:
        metrics=widths_files(),
        floor=widths_floor(),
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
        floors=reported(
            "results/tables/widths_floors.csv",
            caption="../../report/captions/widths_floors_table.rst",
            category=REPORT["widths"],
        ),
        dims=reported(
            "results/tables/widths_dims.csv",
            caption="../../report/captions/widths_dims_table.rst",
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
        design=widths_design(),
    script:
        "../scripts/assemble_widths.py"


rule plot_widths:
    """Experiment W: its figure."""
    input:
        table=rules.assemble_widths.output.table,
        fits=rules.assemble_widths.output.fits,
        eps=rules.assemble_widths.output.eps,
        floors=rules.assemble_widths.output.floors,
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
        "widths_floors": rules.assemble_widths.output.floors,
        "widths_dims": rules.assemble_widths.output.dims,
    },
    figures={"fig_widths": rules.plot_widths},
    claims={
        "widths": (rules.assemble_widths.output.table, "widths"),
        "widths_verdicts": (rules.assemble_widths.output.verdicts, "widths_verdicts"),
        "widths_floors": (rules.assemble_widths.output.floors, "widths_floors"),
        "widths_dims": (rules.assemble_widths.output.dims, "widths_dims"),
    },
    docs=[repo_path("docs", "widths.md")],
    local=["assemble_widths", "plot_widths"],
    targets=[rules.assemble_widths.output],
)
