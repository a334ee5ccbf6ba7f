# Experiment 4, calibration and the cosine ablation: the input functions and params of its rules (noise.smk, which
# includes this file).


#: the noise keys the Monte Carlo itself depends on (the rest are the assembly's fit settings)
NOISE_SAMPLING_KEYS = (
    "scheme",
    "n_samples",
    "chunk",
    "t_min",
    "t_max",
    "points_per_decade",
)


def noise_sampling_params():
    return {key: config["noise"][key] for key in NOISE_SAMPLING_KEYS}


def noise_files(name):
    """One output of the noise-exponent Monte Carlo per dataset and seed."""
    return expand(
        "results/noise/{dataset}/seed~{seed}/{name}",
        dataset=config["noise"]["datasets"],
        seed=config["seeds"],
        name=name,
    )


def ablation_runs():
    """(objective, score) of the cosine ablation: the default objective with every score."""
    return [
        (config["train"]["default_objective"], s) for s in config["ablation"]["scores"]
    ]


def gmm_runs():
    """(objective, score) of every Gaussian-mixture training (Table 1's and the ablation's)."""
    return list(dict.fromkeys(table1_runs() + ablation_runs()))
