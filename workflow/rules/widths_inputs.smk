# Experiment W: the input functions and params of its rules (widths.smk, which
# includes this file).


#: one seed's folder of one width cell; tower f, g (one tower varied) or both (the data check)
WIDTHS_RUN = "{world}/tower~{tower}/width~{width}/data~{data}/seed~{seed}"


def widths_dim(world):
    """The D of a world's width sweep: lcgm.K on the LCGM, widths.gmm_dim on the mixture."""
    return config["lcgm"]["K"] if world == "lcgm" else config["widths"]["gmm_dim"]


def widths_objective(world):
    """The objective of a world's sweep: sampled pairs on the LCGM, widths.gmm_objective else."""
    return LCGM_OBJECTIVE if world == "lcgm" else config["widths"]["gmm_objective"]


def widths_grid(world):
    """The widths of a world's sweep: widths.grid.<world> and train.width (the reused cell)."""
    return sorted({*config["widths"]["grid"][world], config["train"]["width"]})


def widths_worlds():
    """The swept worlds: the keys of widths.grid, LCGM first."""
    return [w for w in ("lcgm", "gmm") if w in config["widths"]["grid"]]


def widths_cells():
    """(world, tower, width, data) of every cell of the sweep, the reused cells at train.width
    included; data "2x" is the LCGM data check (both towers at the widest width)."""
    w = config["widths"]
    cells = [
        (world, tower, width, "1x")
        for world in widths_worlds()
        for tower in w["towers"]
        for width in widths_grid(world)
    ]
    if w["data_check"] and "lcgm" in widths_worlds():
        # the widest cell on the configured pairs (the existing run when the widest width is
        # train.width) and on twice as many
        cells += [("lcgm", "both", widths_grid("lcgm")[-1], d) for d in ("1x", "2x")]
    return cells


def widths_reused(width, data):
    """Whether a cell is the existing run: train.width on the configured data (no new job)."""
    return data == "1x" and int(width) == config["train"]["width"]


def widths_file(world, tower, width, data, seed, name="metrics.json"):
    """One output of a width cell. The cell at train.width is the existing run of rule
    train_encoder (Table 1's mixture run at widths.gmm_dim, the LCGM sweep's at D = K): its
    files, not a new job."""
    if widths_reused(width, data):
        return (
            f"results/encoders/{world}/objective~{widths_objective(world)}/"
            f"score~{config['train']['score']}/dim~{widths_dim(world)}/seed~{seed}/{name}"
        )
    run = WIDTHS_RUN.format(world=world, tower=tower, width=width, data=data, seed=seed)
    return f"results/widths/{run}/{name}"


def widths_files(name="metrics.json"):
    """Every seed's output of every cell of the sweep (reused cells: the existing runs')."""
    return [
        widths_file(*cell, seed, name)
        for cell in widths_cells()
        for seed in config["seeds"]
    ]


def widths_probes():
    """The LCGM sweep's probes at D = K (the reused LCGM cell's held-out excess), if any."""
    if "lcgm" not in widths_worlds():
        return []
    return expand(
        "results/lcgm/score~{score}/dim~{dim}/seed~{seed}/probes.json",
        score=config["train"]["score"],
        dim=config["lcgm"]["K"],
        seed=config["seeds"],
    )


def widths_seed_files(name):
    """One file per seed of a width cell (the cell's wildcards stay open)."""
    return expand(
        f"results/widths/{WIDTHS_RUN}/{{name}}",
        seed=config["seeds"],
        name=name,
        allow_missing=True,
    )


def widths_inputs(wildcards):
    """A width cell's pairs: the LCGM's (training at 1x, and the probe-test pairs every LCGM
    cell is scored on) plus the doubled training set of the data check; the mixture's for
    objective samples; none for the population objective."""
    pattern = "results/data/{world}/seed~{seed}/pairs.npz"
    seeds, world = config["seeds"], wildcards.world
    out = {}
    if world == "lcgm" or widths_objective(world) == "samples":
        out["pairs"] = expand(pattern, world=world, seed=seeds)
    if wildcards.data == "2x":
        out["train_pairs"] = expand(
            "results/widths/data/lcgm/seed~{seed}/pairs.npz", seed=seeds
        )
    return out


def widths_data_params(wildcards):
    """What training and scoring a width cell read from its world's config section."""
    if wildcards.world == "gmm":
        return gmm_params("quadrature_nodes")
    return lcgm_params("n_checkpoint", "n_candidates")


def widths_train_params(wildcards):
    """The training keys of the world's objective and train.score (the cell's width is its
    wildcard, set on the varied tower by the job)."""
    objective = widths_objective(wildcards.world)
    keys = TRAIN_KEYS + TRAIN_KEYS_BY_OBJECTIVE[objective]
    keys += TRAIN_KEYS_BY_SCORE[config["train"]["score"]]
    return {"score": config["train"]["score"]} | {k: config["train"][k] for k in keys}


def widths_steps(wildcards):
    """The data check's step count: the 1x cell's, train.epochs × ⌊lcgm.n_train / batch⌋ (twice
    the pairs, the same optimisation); None (train.epochs passes) for every other cell.
    """
    if wildcards.data != "2x":
        return None
    train = config["train"]
    return train["epochs"] * (config["lcgm"]["n_train"] // train["batch_size"])


def widths_doubled_data(wildcards):
    """The data check's sampled pairs: lcgm.n_train doubled, every other split as configured."""
    params = lcgm_params(*LCGM_SAMPLE_KEYS)
    return params | {"n_train": 2 * params["n_train"]}


def widths_dim_param(wildcards):
    return widths_dim(wildcards.world)


def widths_objective_param(wildcards):
    return widths_objective(wildcards.world)


def widths_theory():
    """What Table 2's shapes drawn beside the sweep read: β (theory.beta) and each world's input
    dimensions (the LCGM's d_x, d_y; the mixture's 1, 1)."""
    lcgm = config["lcgm"]
    return {
        "beta": config["theory"]["beta"],
        "lcgm": {"d1": lcgm["d_x"], "d2": lcgm["d_y"]},
        "gmm": {"d1": 1, "d2": 1},
    }
