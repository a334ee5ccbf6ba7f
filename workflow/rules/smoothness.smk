# Experiment S: the PMI's smoothness against the approximation rate, on additive-noise channels
# whose PMI has a cusp of order β (docs/smoothness.md). Its paths and input functions: smoothness_inputs.smk.


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "smoothness_inputs.smk"


rule compute_smoothness:
    """Experiment S: one world's exact spectrum, decay fit, truncation excess and D(ε)."""
    output:
        world=f"{SMOOTH_WORLD}/world.csv",
        eigenvalues=f"{SMOOTH_WORLD}/eigenvalues.csv",
        excess=f"{SMOOTH_WORLD}/excess.csv",
        eps=f"{SMOOTH_WORLD}/eps.csv",
    log:
        "logs/compute_smoothness/beta~{beta}.log",
    benchmark:
        "benchmarks/compute_smoothness/beta~{beta}.tsv"
    wildcard_constraints:
        beta=r"\d+(\.\d+)?",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime="30m",
    params:
        smooth=smooth_params(*SMOOTH_SPECTRUM_KEYS),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/compute_smoothness.py"


rule compute_smoothness_floor:
    """Experiment S: one world's best rank-D InfoNCE excess (the floor) against D."""
    input:
        world=f"{SMOOTH_WORLD}/world.csv",
    output:
        floor=f"{SMOOTH_WORLD}/floor.csv",
    log:
        "logs/compute_smoothness_floor/beta~{beta}.log",
    benchmark:
        "benchmarks/compute_smoothness_floor/beta~{beta}.tsv"
    wildcard_constraints:
        beta=r"\d+(\.\d+)?",
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="30m",
    params:
        smooth=smooth_params(
            *SMOOTH_GRID_KEYS,
            "dims",
            "floor_iterations",
            "floor_newton_rounds",
            "tolerance",
        ),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/compute_smoothness_floor.py"


# GPU-tagged like train_encoder; one job trains every seed of one cell as one stacked model.
rule train_smoothness:
    """Experiment S: train the default towers on one world's population objective at one D (GPU-tagged)."""
    input:
        world=f"{SMOOTH_WORLD}/world.csv",
    output:
        model=smooth_seed_files("model.pt"),
        metrics=smooth_seed_files("metrics.json"),
        checkpoints=smooth_seed_files("checkpoints.npz"),
    log:
        "logs/train_smoothness/beta~{beta}/D~{dim}.log",
    benchmark:
        "benchmarks/train_smoothness/beta~{beta}/D~{dim}.tsv"
    wildcard_constraints:
        beta=r"\d+(\.\d+)?",
        dim=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=4000,
        runtime="1h",
    params:
        smooth=smooth_params(*SMOOTH_GRID_KEYS, "train_panels"),
        train=smooth_train_params,
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
    script:
        "../scripts/train_smoothness.py"


rule assemble_smoothness:
    """Experiment S: worlds, D(ε), trained cells and the claims table."""
    input:
        worlds=smooth_worlds("world.csv"),
        eigenvalues=smooth_worlds("eigenvalues.csv"),
        excess=smooth_worlds("excess.csv"),
        eps=smooth_worlds("eps.csv"),
        floors=smooth_worlds("floor.csv"),
        metrics=smooth_cells(),
    output:
        worlds=reported(
            "results/tables/smoothness_worlds.csv",
            caption="../../report/captions/smoothness_worlds_table.rst",
            category=REPORT["smoothness"],
        ),
        eps=reported(
            "results/tables/smoothness_eps.csv",
            caption="../../report/captions/smoothness_eps_table.rst",
            category=REPORT["smoothness"],
        ),
        trained=reported(
            "results/tables/smoothness_trained.csv",
            caption="../../report/captions/smoothness_trained_table.rst",
            category=REPORT["smoothness"],
        ),
        claims=reported(
            "results/tables/smoothness_claims.csv",
            caption="../../report/captions/smoothness_claims_table.rst",
            category=REPORT["smoothness"],
        ),
        curves="results/tables/smoothness_curves.csv",
    log:
        "logs/assemble_smoothness/smoothness.log",
    benchmark:
        "benchmarks/assemble_smoothness/smoothness.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        smooth=lookup(dpath="smoothness", within=config),
        seeds=lookup(dpath="seeds", within=config),
    script:
        "../scripts/assemble_smoothness.py"


rule plot_smoothness:
    """Experiment S: figure of λ_i and the excess against D per world."""
    input:
        curves=rules.assemble_smoothness.output.curves,
        eps=rules.assemble_smoothness.output.eps,
        trained=rules.assemble_smoothness.output.trained,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/smoothness.svg",
            caption="../../report/captions/smoothness.rst",
            category=REPORT["smoothness"],
        ),
    log:
        "logs/plot_smoothness/smoothness.log",
    benchmark:
        "benchmarks/plot_smoothness/smoothness.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="smoothness",
    script:
        "../scripts/plot.py"


experiment(
    "smoothness",
    tables={
        "smoothness_worlds": rules.assemble_smoothness.output.worlds,
        "smoothness_eps": rules.assemble_smoothness.output.eps,
        "smoothness_trained": rules.assemble_smoothness.output.trained,
        "smoothness_claims": rules.assemble_smoothness.output.claims,
    },
    figures={"fig_smoothness": rules.plot_smoothness},
    claims={
        "smoothness_claims": (
            rules.assemble_smoothness.output.claims,
            "smoothness_claims",
        )
    },
    docs=[repo_path("docs", "smoothness.md")],
    local=["assemble_smoothness", "plot_smoothness"],
    targets=[rules.assemble_smoothness.output],
)
