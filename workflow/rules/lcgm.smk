# Experiment 3, the latent-class generative model: the design check, the D sweep's probes, the
# probe and elbow tables, and their figures. The sweep's encoders come from rule train_encoder
# (dataset lcgm, objective samples).


# Its input functions (Snakemake's lint keeps functions apart from rules).
include: "lcgm_inputs.smk"


rule check_lcgm_design:
    """LCGM: check the design before any training (anchor cleanliness, Bayes accuracies, the rank-K check)."""
    output:
        design=reported(
            "results/lcgm/design.json",
            caption="../../report/captions/lcgm_design.rst",
            category=REPORT["lcgm"],
        ),
    log:
        "logs/check_lcgm_design/design.log",
    benchmark:
        "benchmarks/check_lcgm_design/design.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        lcgm=lcgm_params("n_probe_test", "rank_check_samples", "rank_tolerance"),
    script:
        "../scripts/check_lcgm_design.py"


# One job per D probes every seed's model (loading torch and the towers once).
rule probe_lcgm:
    """LCGM: linear probes and canonical correlations of one trained cell's features."""
    input:
        models=expand(
            "results/encoders/lcgm/objective~samples/score~{{score}}/dim~{{dim}}/seed~{seed}/model.pt",
            seed=config["seeds"],
        ),
        pairs=expand("results/data/lcgm/seed~{seed}/pairs.npz", seed=config["seeds"]),
    output:
        probes=expand(
            "results/lcgm/score~{{score}}/dim~{{dim}}/seed~{seed}/probes.json",
            seed=config["seeds"],
        ),
        features=expand(
            "results/lcgm/score~{{score}}/dim~{{dim}}/seed~{seed}/features.npz",
            seed=config["seeds"],
        ),
    log:
        "logs/probe_lcgm/score~{score}/dim~{dim}.log",
    benchmark:
        "benchmarks/probe_lcgm/score~{score}/dim~{dim}.tsv"
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        lcgm=lcgm_params("n_candidates", "n_feature_plot"),
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
    script:
        "../scripts/probe_lcgm.py"


rule assemble_lcgm:
    """LCGM: the probe table, the held-out excess against D and its elbow."""
    input:
        probes=lcgm_probes(),
        metrics=encoder_files("lcgm", lcgm_runs(), "metrics.json"),
        paper=repo_path("workflow", "resources", "paper_values.yaml"),
    output:
        table=reported(
            "results/tables/lcgm_probes.csv",
            caption="../../report/captions/lcgm_probes_table.rst",
            category=REPORT["lcgm"],
        ),
        elbow=reported(
            "results/tables/lcgm_elbow.csv",
            caption="../../report/captions/lcgm_elbow_table.rst",
            category=REPORT["lcgm"],
        ),
        runs="results/lcgm/runs.csv",
    log:
        "logs/assemble_lcgm/lcgm.log",
    benchmark:
        "benchmarks/assemble_lcgm/lcgm.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        lcgm=lcgm_params("elbow_fraction"),
        setting=paper_setting("lcgm"),
    script:
        "../scripts/assemble_lcgm.py"


rule plot_lcgm_probes:
    """LCGM: figure of probe R² against D."""
    input:
        table=rules.assemble_lcgm.output.table,
        elbow=rules.assemble_lcgm.output.elbow,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/lcgm_probes.svg",
            caption="../../report/captions/lcgm_probes.rst",
            category=REPORT["lcgm"],
        ),
    log:
        "logs/plot_lcgm_probes/lcgm_probes.log",
    benchmark:
        "benchmarks/plot_lcgm_probes/lcgm_probes.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="lcgm_probes",
    script:
        "../scripts/plot.py"


rule plot_lcgm_cancorr:
    """LCGM: figure of the canonical correlations."""
    input:
        probes=lcgm_probes(),
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/lcgm_cancorr.svg",
            caption="../../report/captions/lcgm_cancorr.rst",
            category=REPORT["lcgm"],
        ),
    log:
        "logs/plot_lcgm_cancorr/lcgm_cancorr.log",
    benchmark:
        "benchmarks/plot_lcgm_cancorr/lcgm_cancorr.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="lcgm_cancorr",
        K=lookup(dpath="lcgm/K", within=config),
    script:
        "../scripts/plot.py"


rule plot_lcgm_features:
    """LCGM: figure of the learned features on held-out points."""
    input:
        features=expand(
            "results/lcgm/score~{score}/dim~{dim}/seed~{seed}/features.npz",
            score=config["train"]["score"],
            dim=feature_view_dims(),
            seed=config["seeds"][0],
        ),
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/lcgm_features.svg",
            caption="../../report/captions/lcgm_features.rst",
            category=REPORT["lcgm"],
        ),
    log:
        "logs/plot_lcgm_features/lcgm_features.log",
    benchmark:
        "benchmarks/plot_lcgm_features/lcgm_features.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="lcgm_features",
        dims=feature_view_dims(),
    script:
        "../scripts/plot.py"


experiment(
    "lcgm",
    tables={
        "lcgm_table": rules.assemble_lcgm.output.table,
        "lcgm_elbow": rules.assemble_lcgm.output.elbow,
        "lcgm_design": rules.check_lcgm_design.output.design,
    },
    figures={
        "fig_lcgm_probes": rules.plot_lcgm_probes,
        "fig_lcgm_cancorr": rules.plot_lcgm_cancorr,
        "fig_lcgm_features": rules.plot_lcgm_features,
    },
    claims={
        "lcgm_probes": (rules.assemble_lcgm.output.table, "lcgm_probes"),
        "lcgm_elbow": (rules.assemble_lcgm.output.elbow, "lcgm_elbow"),
    },
    docs=[repo_path("docs", "lcgm.md")],
    local=[
        "check_lcgm_design",
        "assemble_lcgm",
        "plot_lcgm_probes",
        "plot_lcgm_cancorr",
        "plot_lcgm_features",
    ],
    targets=[rules.assemble_lcgm.output, rules.check_lcgm_design.output],
)
