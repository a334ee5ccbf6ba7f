# The paper's open problem, measured: over the checkpoints of Table 1's Gaussian-mixture runs, the
# alignment of the learned span(f), span(g) with the leading eigenfunctions, and the order in
# which directions are acquired (docs/dynamics.md).


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "dynamics_inputs.smk"


rule train_encoder_budget:
    """Training dynamics: train one mixture cell with checkpoints along its budget (GPU-tagged)."""

    # the convergence gate's budget check: train_encoder's script on Table 1's cells at
    # dynamics.budget_dims, at dynamics.budget_check × the budget (docs/dynamics.md)
    input:
        unpack(encoder_inputs),
    output:
        model=budget_seed_files("model.pt"),
        metrics=budget_seed_files("metrics.json"),
        checkpoints=budget_seed_files("checkpoints.npz"),
    log:
        "logs/train_encoder_budget/{dataset}/objective~{objective}/score~{score}/dim~{dim}.log",
    benchmark:
        "benchmarks/train_encoder_budget/{dataset}/objective~{objective}/score~{score}/dim~{dim}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime="1h",
    params:
        data=training_data_params,
        train=budget_train_params,
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
        early_steps=lookup(dpath="dynamics/early_steps", within=config),
    script:
        "../scripts/train_encoder.py"


rule measure_dynamics:
    """Training dynamics: alignment and acquisition order over the training checkpoints."""
    input:
        metrics=encoder_files("gmm", table1_runs(), "metrics.json"),
        checkpoints=encoder_files("gmm", table1_runs(), "checkpoints.npz"),
        budget_metrics=budget_files("metrics.json"),
        budget_checkpoints=budget_files("checkpoints.npz"),
    output:
        steps="results/tables/dynamics_steps.csv",
        table=reported(
            "results/tables/dynamics.csv",
            caption="../../report/captions/dynamics_table.rst",
            category=REPORT["dynamics"],
        ),
    log:
        "logs/measure_dynamics/dynamics.log",
    benchmark:
        "benchmarks/measure_dynamics/dynamics.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        gmm=gmm_params("quadrature_nodes"),
        tau=lookup(dpath="tau", within=config),
        dynamics=lookup(dpath="dynamics", within=config),
    script:
        "../scripts/measure_dynamics.py"


rule plot_dynamics_alignment:
    """Training dynamics: figure of the spans' alignment along training."""
    input:
        steps=rules.measure_dynamics.output.steps,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/dynamics_alignment.svg",
            caption="../../report/captions/dynamics_alignment.rst",
            category=REPORT["dynamics"],
        ),
    log:
        "logs/plot_dynamics_alignment/dynamics_alignment.log",
    benchmark:
        "benchmarks/plot_dynamics_alignment/dynamics_alignment.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="dynamics_alignment",
    script:
        "../scripts/plot.py"


rule plot_dynamics_directions:
    """Training dynamics: figure of each eigen-direction's acquisition."""
    input:
        steps=rules.measure_dynamics.output.steps,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/dynamics_directions.svg",
            caption="../../report/captions/dynamics_directions.rst",
            category=REPORT["dynamics"],
        ),
    log:
        "logs/plot_dynamics_directions/dynamics_directions.log",
    benchmark:
        "benchmarks/plot_dynamics_directions/dynamics_directions.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="dynamics_directions",
    script:
        "../scripts/plot.py"


rule plot_dynamics_order:
    """Training dynamics: figure of the order in which directions are learned."""
    input:
        table=rules.measure_dynamics.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/dynamics_order.svg",
            caption="../../report/captions/dynamics_order.rst",
            category=REPORT["dynamics"],
        ),
    log:
        "logs/plot_dynamics_order/dynamics_order.log",
    benchmark:
        "benchmarks/plot_dynamics_order/dynamics_order.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="dynamics_order",
    script:
        "../scripts/plot.py"


rule measure_dynamics_lcgm:
    """Training dynamics on the LCGM: the learned f, g against the exact target spans."""
    input:
        metrics=encoder_files("lcgm", lcgm_runs(), "metrics.json"),
        checkpoints=encoder_files("lcgm", lcgm_runs(), "checkpoints.npz"),
        pairs=expand("results/data/lcgm/seed~{seed}/pairs.npz", seed=config["seeds"]),
    output:
        steps="results/tables/dynamics_lcgm_steps.csv",
        table=reported(
            "results/tables/dynamics_lcgm.csv",
            caption="../../report/captions/dynamics_lcgm_table.rst",
            category=REPORT["dynamics"],
        ),
    log:
        "logs/measure_dynamics_lcgm/dynamics_lcgm.log",
    benchmark:
        "benchmarks/measure_dynamics_lcgm/dynamics_lcgm.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        lcgm=lcgm_params("n_train"),
        # the batch size only (steps per epoch): the whole train section reran it on any key
        train={"batch_size": config["train"]["batch_size"]},
        alignment_tol=lookup(dpath="dynamics/alignment_tol", within=config),
    script:
        "../scripts/measure_dynamics_lcgm.py"


rule plot_dynamics_lcgm:
    """Training dynamics on the LCGM: its figure."""
    input:
        steps=rules.measure_dynamics_lcgm.output.steps,
        table=rules.measure_dynamics_lcgm.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/dynamics_lcgm.svg",
            caption="../../report/captions/dynamics_lcgm.rst",
            category=REPORT["dynamics"],
        ),
    log:
        "logs/plot_dynamics_lcgm/dynamics_lcgm.log",
    benchmark:
        "benchmarks/plot_dynamics_lcgm/dynamics_lcgm.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="dynamics_lcgm",
    script:
        "../scripts/plot.py"


experiment(
    "dynamics",
    tables={
        "dynamics_table": rules.measure_dynamics.output.table,
        "dynamics_lcgm_table": rules.measure_dynamics_lcgm.output.table,
    },
    figures={
        "fig_dynamics_alignment": rules.plot_dynamics_alignment,
        "fig_dynamics_directions": rules.plot_dynamics_directions,
        "fig_dynamics_order": rules.plot_dynamics_order,
        "fig_dynamics_lcgm": rules.plot_dynamics_lcgm,
    },
    claims={
        "dynamics": (rules.measure_dynamics.output.table, "dynamics"),
        "dynamics_lcgm": (rules.measure_dynamics_lcgm.output.table, "dynamics_lcgm"),
    },
    docs=[repo_path("docs", "dynamics.md")],
    local=[
        "measure_dynamics_lcgm",
        "plot_dynamics_alignment",
        "plot_dynamics_directions",
        "plot_dynamics_order",
        "plot_dynamics_lcgm",
    ],
    targets=[rules.measure_dynamics.output],
)
