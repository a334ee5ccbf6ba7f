# Experiment 1, columns 1–2: the exact operator spectrum of the Gaussian mixture.


rule compute_spectrum:
    """Table 1: the mixture's PMI operator by quadrature (spectrum, truncation excess, convergence)."""
    output:
        eigenvalues="results/gmm/eigenvalues.csv",
        spectrum=reported(
            "results/gmm/spectrum.csv",
            caption="../../report/captions/spectrum_table.rst",
            category=REPORT["table1"],
        ),
        convergence="results/gmm/convergence.csv",
        crosschecks=reported(
            "results/gmm/crosschecks.csv",
            caption="../../report/captions/crosschecks_table.rst",
            category=REPORT["table1"],
        ),
    log:
        "logs/compute_spectrum/gmm.log",
    benchmark:
        "benchmarks/compute_spectrum/gmm.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="10m",
    params:
        gmm=gmm_params("dims", "quadrature_nodes", "convergence_nodes", "n_eigenvalues"),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/compute_spectrum.py"


rule compute_rank_floor:
    """Table 1: the best rank-D InfoNCE excess on the quadrature (the floor)."""
    output:
        floor="results/gmm/rank_floor.csv",
    log:
        "logs/compute_rank_floor/gmm.log",
    benchmark:
        "benchmarks/compute_rank_floor/gmm.tsv"
    conda:
        "../../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime="30m",
    params:
        gmm=gmm_params("dims", "quadrature_nodes"),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/compute_rank_floor.py"
