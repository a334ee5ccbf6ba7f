# Experiment 1, columns 1–2: the exact operator spectrum of the Gaussian mixture.


rule compute_spectrum:
    output:
        eigenvalues="results/gmm/eigenvalues.csv",
        spectrum="results/gmm/spectrum.csv",
        convergence="results/gmm/convergence.csv",
        crosschecks="results/gmm/crosschecks.csv",
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
        gmm=lookup(dpath="gmm", within=config),
        tau=lookup(dpath="tau", within=config),
    script:
        "../scripts/compute_spectrum.py"
