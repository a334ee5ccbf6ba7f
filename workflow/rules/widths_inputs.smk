# Experiment W: the input functions and params of its rules (widths.smk, which
# includes this file).


#: one seed's folder of one width cell; tower f, g (one tower varied) or both (the widest cell)
WIDTHS_RUN = "{world}/tower~{tower}/width~{width}/budget~{budget}/seed~{seed}"
#: the worlds of the dimension sweep: the LCGM with d_x = d_y = d
WIDTHS_DIM_WORLD = "lcgm_d{}"


def widths_worlds():
    """The swept worlds, LCGM first: the LCGM at its configured dimensions, then one LCGM per d
    of widths.dim_sweep.dims (d_x = d_y = d, its own grid widths.grid.lcgm), then the mixture.
    """
    w = config["widths"]
    out = ["lcgm"] if "lcgm" in w["grid"] else []
    if out:
        out += [WIDTHS_DIM_WORLD.format(d) for d in w["dim_sweep"]["dims"]]
    return out + (["gmm"] if "gmm" in w["grid"] else [])


def widths_is_lcgm(world):
    return world.startswith("lcgm")


def widths_world_dims(world):
    """(d_x, d_y) of an LCGM world: lcgm.d_x, lcgm.d_y, or d, d for lcgm_d<d>."""
    if world == "lcgm":
        return config["lcgm"]["d_x"], config["lcgm"]["d_y"]
    d = int(world.removeprefix("lcgm_d"))
    return d, d


def widths_dim(world):
    """The D of a world's width sweep: lcgm.K on the LCGM worlds, widths.gmm_dim on the mixture."""
    return config["lcgm"]["K"] if widths_is_lcgm(world) else config["widths"]["gmm_dim"]


def widths_objective(world):
    """The objective of a world's sweep: a fresh stream on the LCGM, widths.gmm_objective else."""
    return "fresh" if widths_is_lcgm(world) else config["widths"]["gmm_objective"]


def widths_grid(world):
    """The widths of a world's sweep: widths.grid.<lcgm|gmm> and train.width (the widest cell)."""
    key = "lcgm" if widths_is_lcgm(world) else "gmm"
    return sorted({*config["widths"]["grid"][key], config["train"]["width"]})


def widths_cells():
    """(world, tower, width, budget) of every cell of the sweep. Each tower's sweep ends at
    train.width, the widest cell (both towers at train.width: on the LCGM one trained cell,
    tower "both", which is also its optimisation floor; on the mixture the existing run).
    Budget "2x" is a cell at widths.budget_check × widths.lcgm_steps: the LCGM's widest cell
    (budget_check_scope "widest"), or every cell of every LCGM world ("sweeps")."""
    w = config["widths"]
    cells = [
        (world, tower, width, "1x")
        for world in widths_worlds()
        for tower in w["towers"]
        for width in widths_grid(world)
    ]
    widest = config["train"]["width"]
    lcgm_worlds = [world for world in widths_worlds() if widths_is_lcgm(world)]
    cells += [(world, "both", widest, "1x") for world in lcgm_worlds]
    if w["budget_check"] <= 1 or not lcgm_worlds:
        return cells
    if w["budget_check_scope"] == "sweeps":
        for world in lcgm_worlds:
            cells += [
                (world, t, x, "2x") for t in w["towers"] for x in widths_grid(world)
            ]
            cells.append((world, "both", widest, "2x"))
    elif "lcgm" in lcgm_worlds:
        cells.append(("lcgm", "both", widest, "2x"))
    return cells


def widths_file(world, tower, width, budget, seed, name="metrics.json"):
    """One output of a width cell. The cell at train.width is the widest cell: on the LCGM the
    job of tower "both" (at either budget), on the mixture the existing run of rule
    train_encoder (Table 1's run at widths.gmm_dim), reused, never retrained."""
    widest = int(width) == config["train"]["width"]
    if widest and (budget == "1x" or widths_is_lcgm(world)):
        if not widths_is_lcgm(world):
            return (
                f"results/encoders/{world}/objective~{widths_objective(world)}/"
                f"score~{config['train']['score']}/dim~{widths_dim(world)}/seed~{seed}/{name}"
            )
        tower = "both"
    run = WIDTHS_RUN.format(
        world=world, tower=tower, width=width, budget=budget, seed=seed
    )
    return f"results/widths/{run}/{name}"


def widths_files(name="metrics.json"):
    """Every seed's output of every cell of the sweep (the widest cells' shared or reused)."""
    return [
        widths_file(*cell, seed, name)
        for cell in widths_cells()
        for seed in config["seeds"]
    ]


def widths_narrower(kind):
    """The widths of a tower's sweep job on an LCGM world (kind "lcgm") or the mixture ("gmm"):
    widths.grid.<kind> without train.width (the widest cell, a job or a run of its own).
    """
    grid = config["widths"]["grid"].get(kind, [])
    return sorted({int(w) for w in grid} - {config["train"]["width"]})


def widths_sweep_files(kind, name):
    """One file per width and seed of a tower's sweep job (world, tower and budget stay open)."""
    return expand(
        f"results/widths/{WIDTHS_RUN}/{{name}}",
        width=widths_narrower(kind),
        seed=config["seeds"],
        name=name,
        allow_missing=True,
    )


def widths_widest_files(name):
    """One file per seed of an LCGM world's widest cell (world and budget stay open)."""
    return expand(
        f"results/widths/{WIDTHS_RUN}/{{name}}",
        tower="both",
        width=config["train"]["width"],
        seed=config["seeds"],
        name=name,
        allow_missing=True,
    )


def widths_tower_param(wildcards):
    """The varied tower of a sweep job: f or g (rule train_widths_widest sets "both")."""
    return wildcards.tower


def widths_budget_param(wildcards):
    """A job's budget: 1x, or 2x (widths.budget_check × the steps)."""
    return wildcards.get("budget", "1x")


def widths_job_widths(wildcards):
    """The widths a sweep job trains, in order: its world's narrower widths (rule
    train_widths_widest sets train.width)."""
    return widths_narrower("lcgm" if widths_is_lcgm(wildcards.world) else "gmm")


def widths_inputs(wildcards):
    """A width cell's pairs: the mixture's for objective samples; none else (the LCGM cells
    draw their validation and probe-test pairs from the seed's streams, and train on a fresh
    stream: they read no training pool)."""
    if (
        not widths_is_lcgm(wildcards.world)
        and widths_objective(wildcards.world) == "samples"
    ):
        return {
            "pairs": expand(
                "results/data/{world}/seed~{seed}/pairs.npz",
                world=wildcards.world,
                seed=config["seeds"],
            )
        }
    return {}


def widths_data_params(wildcards):
    """What training and scoring a width cell read from its world's config section: on the
    LCGM its model (d_x = d_y = d on a dimension-sweep world), the probe-test pairs' count and
    blocks, and the validation pairs (lcgm.n_candidates of the seed's validation stream); never
    lcgm.n_train."""
    if not widths_is_lcgm(wildcards.world):
        return gmm_params("quadrature_nodes")
    d_x, d_y = widths_world_dims(wildcards.world)
    params = lcgm_params("n_checkpoint", "n_candidates", "n_probe_test")
    return params | {"d_x": d_x, "d_y": d_y, "n_val": config["lcgm"]["n_candidates"]}


def widths_train_params(wildcards):
    """The training keys of the world's objective and train.score (each cell's width, from
    widths_job_widths, is set on the varied tower by the job); the LCGM's batch is
    widths.lcgm_batch."""
    objective = widths_objective(wildcards.world)
    if widths_is_lcgm(wildcards.world):
        keys = TRAIN_KEYS + TRAIN_KEYS_BY_OBJECTIVE["samples"]
    else:
        keys = TRAIN_KEYS + TRAIN_KEYS_BY_OBJECTIVE[objective]
    keys += TRAIN_KEYS_BY_SCORE[config["train"]["score"]]
    out = {"score": config["train"]["score"]} | {k: config["train"][k] for k in keys}
    if widths_is_lcgm(wildcards.world):
        out["batch_size"] = config["widths"]["lcgm_batch"]
        objective = "samples"
    return out | step_kernels(objective, config["train"]["score"])


def widths_steps(wildcards):
    """An LCGM cell's steps: widths.lcgm_steps, times widths.budget_check at budget 2x; None on
    the mixture (train.population_steps, or train.epochs passes)."""
    if not widths_is_lcgm(wildcards.world):
        return None
    w = config["widths"]
    return w["lcgm_steps"] * (
        w["budget_check"] if widths_budget_param(wildcards) == "2x" else 1
    )


def widths_dim_param(wildcards):
    return widths_dim(wildcards.world)


def widths_objective_param(wildcards):
    return widths_objective(wildcards.world)


def widths_floor():
    """The mixture's exact floor: the best rank-D InfoNCE excess (rule compute_rank_floor)."""
    return ["results/gmm/rank_floor.csv"] if "gmm" in widths_worlds() else []


def widths_design():
    """What the assembly reads of the design: each world's input dimensions and the theory's β."""
    worlds = {"gmm": {"d1": 1, "d2": 1}}
    for world in widths_worlds():
        if widths_is_lcgm(world):
            d_x, d_y = widths_world_dims(world)
            worlds[world] = {"d1": d_x, "d2": d_y}
    return {"beta": config["theory"]["beta"]} | worlds
