# Experiment R, the theory on real images (docs/experiment_r.md): scikit-learn's bundled digits,
# the exact class operator of pairing 1, the (pairing, D) sweep trained with every seed of a cell
# in one job (the batched trainer and GPU tag of train_encoder), the assembled tables and figure.


# Its input functions and params (Snakemake's lint keeps functions apart from rules).
include: "digits_inputs.smk"


rule make_digits:
    """Experiment R: split scikit-learn's bundled 8x8 digits into train/validation/held-out pairs."""
    output:
        images="results/digits/images.npz",
    log:
        "logs/make_digits/images.log",
    benchmark:
        "benchmarks/make_digits/images.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        digits=digits_params("split_seed", "train_fraction", "val_fraction"),
    script:
        "../scripts/make_digits.py"


rule compute_digits_operator:
    """Experiment R: the exact class operator of every grouping of the digits."""
    output:
        table=reported(
            "results/tables/digits_class_operator.csv",
            caption="../../report/captions/digits_classes_table.rst",
            category=REPORT["digits"],
        ),
    log:
        "logs/compute_digits_operator/operator.log",
    benchmark:
        "benchmarks/compute_digits_operator/operator.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="10m",
    params:
        digits=digits_params("groupings", "keep_max", "keep_min"),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/compute_digits_operator.py"


# The GPU tag of train_encoder (see encoders.smk): one job trains every seed of a (pairing, D) cell.
# A cell takes seconds, so on a cluster several cells share one submission: the group below, sized
# by profiles/slurm's group-components, run one after another on the one GPU the group requests.
rule train_digits:
    """Experiment R: train the two-tower encoders on one digits pairing at one D (every seed, GPU-tagged)."""
    input:
        images=rules.make_digits.output.images,
    output:
        metrics=digits_seed_files("metrics.json"),
        checkpoints=digits_seed_files("checkpoints.npz"),
    log:
        "logs/train_digits/{pairing}/dim~{dim}.log",
    benchmark:
        "benchmarks/train_digits/{pairing}/dim~{dim}.tsv"
    group:
        "digits_training"
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=2000,
        runtime="30m",
    params:
        digits=digits_train_params,
        train=digits_tower_params,
        tau=lookup(dpath="tau", within=config),
        seeds=lookup(dpath="seeds", within=config),
    script:
        "../scripts/train_digits.py"


rule assemble_digits:
    """Experiment R: its held-out numbers, tables and verdicts."""
    input:
        images=rules.make_digits.output.images,
        classes=rules.compute_digits_operator.output.table,
        metrics=digits_runs("metrics.json"),
        checkpoints=digits_runs("checkpoints.npz"),
    output:
        runs="results/digits/runs.csv",
        sweep=reported(
            "results/tables/digits_sweep.csv",
            caption="../../report/captions/digits_sweep_table.rst",
            category=REPORT["digits"],
        ),
        elbow=reported(
            "results/tables/digits_elbow.csv",
            caption="../../report/captions/digits_elbow_table.rst",
            category=REPORT["digits"],
        ),
        verdicts=reported(
            "results/tables/digits_verdicts.csv",
            caption="../../report/captions/digits_verdicts_table.rst",
            category=REPORT["digits"],
        ),
        table1=reported(
            "results/tables/digits_table1.csv",
            caption="../../report/captions/digits_table1_table.rst",
            category=REPORT["digits"],
        ),
        curves="results/tables/digits_curves.csv",
        convergence="results/tables/digits_convergence.csv",
        singular_values="results/tables/digits_singular_values.csv",
        cancorr=reported(
            "results/tables/digits_cancorr.csv",
            caption="../../report/captions/digits_cancorr_table.rst",
            category=REPORT["digits"],
        ),
        examples="results/digits/examples.npz",
    log:
        "logs/assemble_digits/digits.log",
    benchmark:
        "benchmarks/assemble_digits/digits.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        digits=lookup(dpath="digits", within=config),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/assemble_digits.py"


rule plot_digits:
    """Experiment R: the digits figure (held-out excess and spectrum against D)."""
    input:
        sweep=rules.assemble_digits.output.sweep,
        elbow=rules.assemble_digits.output.elbow,
        singular_values=rules.assemble_digits.output.singular_values,
        examples=rules.assemble_digits.output.examples,
        classes=rules.compute_digits_operator.output.table,
        code=PLOT_CODE,
    output:
        figure=reported(
            "results/figures/digits.svg",
            caption="../../report/captions/digits.rst",
            category=REPORT["digits"],
        ),
    log:
        "logs/plot_digits/digits.log",
    benchmark:
        "benchmarks/plot_digits/digits.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime="5m",
    params:
        kind="digits",
    script:
        "../scripts/plot.py"


experiment(
    "digits",
    tables={
        "digits_sweep": rules.assemble_digits.output.sweep,
        "digits_elbow": rules.assemble_digits.output.elbow,
        "digits_verdicts": rules.assemble_digits.output.verdicts,
        "digits_table1": rules.assemble_digits.output.table1,
        "digits_cancorr": rules.assemble_digits.output.cancorr,
        "digits_classes": rules.compute_digits_operator.output.table,
    },
    figures={"fig_digits": rules.plot_digits},
    claims={
        "digits_verdicts": (rules.assemble_digits.output.verdicts, "digits_verdicts"),
        "digits_elbow": (rules.assemble_digits.output.elbow, "digits_elbow"),
    },
    docs=[repo_path("docs", "experiment_r.md")],
    local=["make_digits", "compute_digits_operator", "assemble_digits", "plot_digits"],
    targets=[rules.assemble_digits.output],
)
