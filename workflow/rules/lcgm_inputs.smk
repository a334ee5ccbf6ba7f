# Experiment 3, the LCGM sweep: the input functions of its rules (lcgm.smk, which includes this
# file).


def lcgm_probes():
    """Every probe output of the sweep (configured score, dims and seeds)."""
    return expand(
        "results/lcgm/score~{score}/dim~{dim}/seed~{seed}/probes.json",
        score=config["train"]["score"],
        dim=config["lcgm"]["dims"],
        seed=config["seeds"],
    )


def feature_view_dims():
    """The 2-D view shows the smallest D >= 2 and the largest D <= K of the sweep."""
    dims = sorted(config["lcgm"]["dims"])
    low = next((d for d in dims if d >= 2), dims[-1])
    high = max((d for d in dims if d <= config["lcgm"]["K"]), default=dims[0])
    return sorted({low, high})
