# The sample-size study of Table 1's MLP columns: the `samples` protocol at a fixed step budget
# while the training pairs vary (pools of n pairs, a fresh stream), a budget axis for the fresh
# stream, other learning rates; decomposed against the rank-D floor and the population-trained MLP.


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "sample_size_inputs.smk"


rule make_pool:
    """Sample-size study: the pool of training pairs the study subsamples."""
    output:
        pairs="results/sample_size/data/pool~{pool}/seed~{seed}/pairs.npz",
    log:
        "logs/make_pool/pool~{pool}/seed~{seed}.log",
    benchmark:
        "benchmarks/make_pool/pool~{pool}/seed~{seed}.tsv"
    wildcard_constraints:
        pool=r"\d+",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        data=lambda wildcards: gmm_params("n_val") | {"n_train": int(wildcards.pool)},
    script:
        "../scripts/make_pool.py"


# GPU-tagged like train_encoder; one job trains every seed of one cell as one stacked model.
rule train_sample_size:
    """Sample-size study: train one cell at one sample size, budget and learning rate."""
    input:
        unpack(pool_files),
    output:
        model=sample_size_seed_files("model.pt"),
        metrics=sample_size_seed_files("metrics.json"),
        checkpoints=sample_size_seed_files("checkpoints.npz"),
    log:
        "logs/train_sample_size/score~{score}/pool~{pool}/budget~{budget}x/lr~{lr}/dim~{dim}.log",
    benchmark:
        "benchmarks/train_sample_size/score~{score}/pool~{pool}/budget~{budget}x/lr~{lr}/dim~{dim}.tsv"
    wildcard_constraints:
        pool=r"\d+|fresh",
        budget=r"\d+",
        lr=r"[0-9.]+(e-?\d+)?",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime="2h",
    params:
        data=gmm_params("quadrature_nodes", "n_val"),
        train=sample_size_train_params,
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
        steps=lambda wildcards: study_budget() * int(wildcards.budget),
    script:
        "../scripts/train_sample_size.py"


rule assemble_sample_size:
    """Sample-size study: excess split into approximation, optimisation and sampling."""
    input:
        study=sample_size_files(),
        population=encoder_files(
            "gmm", [("population", config["train"]["score"])], "metrics.json"
        ),
        floor=rules.compute_rank_floor.output.floor,
        paper=repo_path("workflow", "resources", "paper_values.yaml"),
    output:
        table=reported(
            "results/tables/sample_size.csv",
            caption="../../report/captions/sample_size_table.rst",
            category=REPORT["sample_size"],
        ),
        fits=reported(
            "results/tables/sample_size_fits.csv",
            caption="../../report/captions/sample_size_fits_table.rst",
            category=REPORT["sample_size"],
        ),
        runs="results/tables/sample_size_runs.csv",
    log:
        "logs/assemble_sample_size/sample_size.log",
    benchmark:
        "benchmarks/assemble_sample_size/sample_size.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        study=lookup(dpath="sample_size", within=config),
        cells=sample_size_cells(),
        budget=study_budget(),
        lr=lookup(dpath="train/lr", within=config),
        batch_size=lookup(dpath="train/batch_size", within=config),
        seeds=lookup(dpath="seeds", within=config),
        setting=paper_setting("table1_mlp"),
    script:
        "../scripts/assemble_sample_size.py"


rule plot_sample_size:
    """Sample-size study: its figure."""
    input:
        table=rules.assemble_sample_size.output.table,
        fits=rules.assemble_sample_size.output.fits,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/sample_size.svg",
            caption="../../report/captions/sample_size.rst",
            category=REPORT["sample_size"],
        ),
    log:
        "logs/plot_sample_size/sample_size.log",
    benchmark:
        "benchmarks/plot_sample_size/sample_size.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="sample_size",
    script:
        "../scripts/plot.py"


experiment(
    "sample_size",
    tables={
        "sample_size_table": rules.assemble_sample_size.output.table,
        "sample_size_fits": rules.assemble_sample_size.output.fits,
    },
    figures={"fig_sample_size": rules.plot_sample_size},
    claims={"sample_size": (rules.assemble_sample_size.output.table, "sample_size")},
    docs=[repo_path("docs", "sample_size.md")],
    local=["make_pool", "assemble_sample_size", "plot_sample_size"],
    targets=[rules.assemble_sample_size.output],
)
