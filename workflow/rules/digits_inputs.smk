# Experiment R: the input functions and params of its rules (digits.smk, which
# includes this file).


def digits_params(*keys):
    """The named keys of the digits section."""
    return {key: config["digits"][key] for key in keys}


def digits_pairings():
    """Every (pairing, D) cell: K<k> per grouping over its dims, then halves over halves_dims."""
    cells = [
        (f"K{len(g['groups'])}", d)
        for g in config["digits"]["groupings"]
        for d in g["dims"]
    ]
    return cells + [("halves", d) for d in config["digits"]["halves_dims"]]


def digits_seed_files(name):
    """One file per seed of a train_digits cell (pairing and dim wildcards open)."""
    return expand(
        "results/digits/encoders/{pairing}/dim~{dim}/seed~{seed}/{name}",
        seed=config["seeds"],
        name=name,
        allow_missing=True,
    )


def digits_runs(name):
    """The named file of every run of the sweep, in cell order then seed order."""
    return [
        f"results/digits/encoders/{p}/dim~{d}/seed~{s}/{name}"
        for p, d in digits_pairings()
        for s in config["seeds"]
    ]


def digits_train_params(wildcards):
    """What one train_digits cell depends on: the split and budget, and its own grouping (pairing
    1) or nothing more (pairing 2)."""
    keys = ("split_seed", "train_fraction", "val_fraction", "batch_size", "checkpoints")
    if wildcards.pairing == "halves":
        keys += ("halves_steps",)
    else:
        keys += ("keep_max", "keep_min", "n_train_pairs", "n_val_pairs", "steps")
        # only this pairing's grouping: changing another grouping (its dims, its own steps) does
        # not retrain this one's cells
        k = int(wildcards.pairing[1:])
        own = [g for g in config["digits"]["groupings"] if len(g["groups"]) == k]
        return digits_params(*keys) | {"groupings": own}
    return digits_params(*keys)


def digits_tower_params(wildcards):
    """The train section's towers and weight decay; the experiment's own schedule and
    learning rate (section digits: ``lr`` for pairing 1, ``halves_lr`` for pairing 2).
    """
    keys = ("width", "depth", "weight_decay")
    lr = config["digits"]["halves_lr" if wildcards.pairing == "halves" else "lr"]
    own = {"lr": lr, "schedule": config["digits"]["schedule"]}
    own |= step_kernels("samples")
    return {"score": "inner"} | {key: config["train"][key] for key in keys} | own
