# Experiment S's paths and input functions (its rules are in smoothness.smk; docs/smoothness.md).

SMOOTH_WORLD = "results/smoothness/beta~{beta}"
SMOOTH_CELL = "results/smoothness/beta~{beta}/D~{dim}/seed~{seed}"
#: the keys of the smoothness section each job reads (so a change reruns only what reads it)
SMOOTH_SPECTRUM_KEYS = ("mutual_information", "panels", "panels_low", "order", "growth")
SMOOTH_SPECTRUM_KEYS += ("n_eigenvalues", "tolerance", "fit_from", "max_dim", "eps")
SMOOTH_SPECTRUM_KEYS += ("alpha_from_dim",)
SMOOTH_GRID_KEYS = ("order", "growth", "floor_panels")


def smooth_tag(beta):
    """A world's β as its path shows it (0.5, 1, 1.5, 2)."""
    return f"{float(beta):g}"


def smooth_params(*keys):
    return {key: config["smoothness"][key] for key in keys}


def smooth_worlds(name, betas=None):
    betas = config["smoothness"]["betas"] if betas is None else betas
    return expand(f"{SMOOTH_WORLD}/{name}", beta=[smooth_tag(b) for b in betas])


def smooth_cells(name="metrics.json"):
    """Every trained cell's per-seed file."""
    return expand(
        f"{SMOOTH_CELL}/{name}",
        beta=[smooth_tag(b) for b in config["smoothness"]["trained"]],
        dim=config["smoothness"]["dims"],
        seed=config["seeds"],
    )


def smooth_seed_files(name):
    return expand(
        f"{SMOOTH_CELL}/{name}", seed=config["seeds"], name=name, allow_missing=True
    )


def smooth_train_params(wildcards):
    """The train keys the population objective reads (not population_nodes: the grid is S's)."""
    keys = TRAIN_KEYS + ("population_steps",)
    own = {"score": "inner"} | {k: config["train"][k] for k in keys}
    return own | step_kernels("population")
