# Experiment 4 (the noise exponent) and two measurements the paper does not make: calibration
# (retrieval excess against contrastive excess) and the cosine-score ablation.


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "noise_inputs.smk"


# The Monte Carlo writes only counts on the t grid; every fit (window, bootstrap, local slopes,
# asymptotics) is assemble_noise's, so changing noise.window or noise.ci_level reruns no draws.
rule estimate_noise_exponent:
    """Noise exponent: Monte Carlo of P(|r(x,y) − r(x,y')| ≤ t) for one dataset and seed."""
    output:
        counts="results/noise/{dataset}/seed~{seed}/counts.json",
    log:
        "logs/estimate_noise_exponent/{dataset}/seed~{seed}.log",
    benchmark:
        "benchmarks/estimate_noise_exponent/{dataset}/seed~{seed}.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime="30m",
    params:
        data=lambda wc: gmm_params() if wc.dataset == "gmm" else lcgm_params(),
        noise=noise_sampling_params(),
    script:
        "../scripts/estimate_noise_exponent.py"


rule assemble_noise:
    """Noise exponent: the μ̂ table and its fits for both datasets."""
    input:
        counts=noise_files("counts.json"),
        paper=repo_path("workflow", "resources", "paper_values.yaml"),
    output:
        table=reported(
            "results/tables/noise_exponent.csv",
            caption="../../report/captions/noise_table.rst",
            category=REPORT["noise"],
        ),
        curve="results/tables/noise_curve.csv",
    log:
        "logs/assemble_noise/noise.log",
    benchmark:
        "benchmarks/assemble_noise/noise.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="10m",
    params:
        datasets=lookup(dpath="noise/datasets", within=config),
        gmm=gmm_params(),
        noise=lookup(dpath="noise", within=config),
    script:
        "../scripts/assemble_noise.py"


rule measure_calibration:
    """Calibration: retrieval excess against contrastive excess over many scores."""
    input:
        metrics=encoder_files("gmm", gmm_runs(), "metrics.json"),
        checkpoints=encoder_files("gmm", gmm_runs(), "checkpoints.npz"),
        noise=rules.assemble_noise.output.table,
    output:
        points=reported(
            "results/tables/calibration_points.csv",
            caption="../../report/captions/calibration_points_table.rst",
            category=REPORT["calibration"],
        ),
        table=reported(
            "results/tables/calibration.csv",
            caption="../../report/captions/calibration_table.rst",
            category=REPORT["calibration"],
        ),
    log:
        "logs/measure_calibration/calibration.log",
    benchmark:
        "benchmarks/measure_calibration/calibration.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="30m",
    params:
        gmm=gmm_params("quadrature_nodes"),
        tau=lookup(dpath="tau", within=config),
        calibration=lookup(dpath="calibration", within=config),
        seed=lambda wc: config["seeds"][0],
    script:
        "../scripts/measure_calibration.py"


rule assemble_cosine:
    """Cosine score: the cosine-similarity towers against the inner-product ones."""
    input:
        metrics=encoder_files("gmm", ablation_runs(), "metrics.json"),
        spectrum=rules.compute_spectrum.output.spectrum,
        floor=rules.compute_rank_floor.output.floor,
    output:
        table=reported(
            "results/tables/cosine_ablation.csv",
            caption="../../report/captions/cosine_table.rst",
            category=REPORT["cosine"],
        ),
    log:
        "logs/assemble_cosine/cosine.log",
    benchmark:
        "benchmarks/assemble_cosine/cosine.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        scores=lookup(dpath="ablation/scores", within=config),
    script:
        "../scripts/assemble_cosine.py"


rule plot_noise_exponent:
    """Noise exponent: its figure."""
    input:
        table=rules.assemble_noise.output.table,
        curve=rules.assemble_noise.output.curve,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/noise_exponent.svg",
            caption="../../report/captions/noise_exponent.rst",
            category=REPORT["noise"],
        ),
    log:
        "logs/plot_noise_exponent/noise_exponent.log",
    benchmark:
        "benchmarks/plot_noise_exponent/noise_exponent.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="noise_exponent",
    script:
        "../scripts/plot.py"


rule plot_calibration:
    """Calibration: its figure."""
    input:
        points=rules.measure_calibration.output.points,
        table=rules.measure_calibration.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/calibration.svg",
            caption="../../report/captions/calibration.rst",
            category=REPORT["calibration"],
        ),
    log:
        "logs/plot_calibration/calibration.log",
    benchmark:
        "benchmarks/plot_calibration/calibration.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="calibration",
    script:
        "../scripts/plot.py"


rule plot_cosine:
    """Cosine score: its figure."""
    input:
        table=rules.assemble_cosine.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/cosine_ablation.svg",
            caption="../../report/captions/cosine.rst",
            category=REPORT["cosine"],
        ),
    log:
        "logs/plot_cosine/cosine_ablation.log",
    benchmark:
        "benchmarks/plot_cosine/cosine_ablation.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="cosine",
    script:
        "../scripts/plot.py"


experiment(
    "noise",
    tables={"noise_table": rules.assemble_noise.output.table},
    figures={"fig_noise": rules.plot_noise_exponent},
    claims={"noise_exponent": (rules.assemble_noise.output.table, "noise_exponent")},
    docs=[repo_path("docs", "noise.md")],
    local=["assemble_noise", "plot_noise_exponent"],
    targets=[rules.assemble_noise.output],
)


experiment(
    "calibration",
    tables={
        "calibration_table": rules.measure_calibration.output.table,
        "calibration_points": rules.measure_calibration.output.points,
    },
    figures={"fig_calibration": rules.plot_calibration},
    docs=[repo_path("docs", "calibration.md")],
    local=["plot_calibration"],
)


experiment(
    "cosine",
    tables={"cosine_table": rules.assemble_cosine.output.table},
    figures={"fig_cosine": rules.plot_cosine},
    docs=[repo_path("docs", "cosine.md")],
    local=["assemble_cosine", "plot_cosine"],
    targets=[rules.assemble_cosine.output],
)
