# Sampled datasets (Experiments 1 and 3), two-tower encoders per (dataset, objective, score, D)
# with every seed of a cell in one job, and the assembled Table 1.


rule make_dataset:
    """Sample the pairs of one dataset (mixture or LCGM) for one seed."""
    output:
        pairs="results/data/{dataset}/seed~{seed}/pairs.npz",
    log:
        "logs/make_dataset/{dataset}/seed~{seed}.log",
    benchmark:
        "benchmarks/make_dataset/{dataset}/seed~{seed}.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        data=dataset_params,
    script:
        "../scripts/make_dataset.py"


# The GPU tag: profiles map `gpu` to a cluster GPU request (profiles/slurm) or to a local card limit
# (profiles/local-gpu). The code uses CUDA when a GPU is visible (one card per concurrent job, see
# crl_approx/training/gpu_slots.py) and the job's thread on CPU. One job trains every seed of one
# (dataset, objective, score, D) cell as one stacked model and writes each seed's files.
rule train_encoder:
    """Train the MLP towers of one Table 1 / LCGM cell (one objective, one D, every seed; GPU-tagged)."""
    input:
        unpack(encoder_inputs),
    output:
        model=seed_files("model.pt"),
        metrics=seed_files("metrics.json"),
        checkpoints=seed_files("checkpoints.npz"),
    log:
        "logs/train_encoder/{dataset}/objective~{objective}/score~{score}/dim~{dim}.log",
    benchmark:
        "benchmarks/train_encoder/{dataset}/objective~{objective}/score~{score}/dim~{dim}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime="1h",
    params:
        data=training_data_params,
        train=train_params,
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
        early_steps=lookup(dpath="dynamics/early_steps", within=config),
    script:
        "../scripts/train_encoder.py"


rule assemble_table1:
    """Table 1: the spectral columns and the trained MLP columns beside the paper's numbers."""
    input:
        spectrum=rules.compute_spectrum.output.spectrum,
        floor=rules.compute_rank_floor.output.floor,
        metrics=encoder_files("gmm", table1_runs(), "metrics.json"),
        paper=repo_path("workflow", "resources", "paper_values.yaml"),
    output:
        table=reported(
            "results/tables/table1.csv",
            caption="../../report/captions/table1.rst",
            category=REPORT["table1"],
        ),
        runs="results/tables/encoder_runs_gmm.csv",
    log:
        "logs/assemble_table1/table1.log",
    benchmark:
        "benchmarks/assemble_table1/table1.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        objectives=lookup(dpath="train/objectives", within=config),
        default_objective=lookup(dpath="train/default_objective", within=config),
        setting=paper_setting("table1_spectral_tail", "table1_truncation", "table1_mlp"),
    script:
        "../scripts/assemble_table1.py"


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


experiment(
    "table1",
    tables={
        "table1": rules.assemble_table1.output.table,
        "spectrum": rules.compute_spectrum.output.spectrum,
        "crosschecks": rules.compute_spectrum.output.crosschecks,
    },
    figures={
        "fig_eigenvalues": rules.plot_eigenvalues,
        "fig_excess": rules.plot_excess,
        "fig_training": rules.plot_training_curves,
    },
    claims={
        "table1": (rules.assemble_table1.output.table, "table1"),
        "spectrum": (rules.compute_spectrum.output.spectrum, "crosschecks"),
    },
    docs=[repo_path("docs", "table1.md")],
    local=[
        "make_dataset",
        "compute_spectrum",
        "assemble_table1",
        "plot_eigenvalues",
        "plot_excess",
        "plot_training_curves",
    ],
    targets=[rules.compute_spectrum.output],
)
