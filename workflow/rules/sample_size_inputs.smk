# The sample-size study: the input functions and params of its rules (sample_size.smk, which
# includes this file).


def study_budget():
    """The study's step budget: the default `samples` run's number of optimiser steps."""
    train = config["train"]
    return train["epochs"] * (config["gmm"]["n_train"] // train["batch_size"])


def sample_size_cells():
    """(pool, budget multiplier, lr label, D) of every cell of the study; pool is a pool size or
    "fresh". Pools at 1x budget and train.lr at every D; the fresh stream at every budget
    multiplier at sample_size.budget_dims; the other learning rates at 1x there."""
    study, lr0 = config["sample_size"], lr_label(config["train"]["lr"])
    protocols = [*study["pools"], *(["fresh"] if study["fresh"] else [])]
    cells = [(p, 1, lr0, d) for p in protocols for d in config["gmm"]["dims"]]
    if study["fresh"]:
        for m in study["budget_multipliers"]:
            cells += [("fresh", m, lr0, d) for d in study["budget_dims"]]
    for lr in map(lr_label, study["other_lrs"]):
        for p in study["lr_protocols"]:
            cells += [(p, 1, lr, d) for d in study["budget_dims"]]
    return list(dict.fromkeys(cells))


#: one seed's folder of one cell of the study
STUDY_RUN = "score~{score}/pool~{pool}/budget~{budget}x/lr~{lr}/dim~{dim}/seed~{seed}"


def sample_size_file(pool, budget, lr, dim, seed, name="metrics.json"):
    """One output of a study cell. The pool of n = gmm.n_train at 1x budget and train.lr is the
    `samples` run of Table 1 (same pairs, same steps, same schedule): its files, not a new job.
    """
    score = config["train"]["score"]
    if (pool, int(budget), lr) == (
        config["gmm"]["n_train"],
        1,
        lr_label(config["train"]["lr"]),
    ):
        return f"results/encoders/gmm/objective~samples/score~{score}/dim~{dim}/seed~{seed}/{name}"
    run = STUDY_RUN.format(
        score=score, pool=pool, budget=budget, lr=lr, dim=dim, seed=seed
    )
    return f"results/sample_size/{run}/{name}"


def sample_size_seed_files(name):
    """One file per seed of a study cell (the cell's wildcards stay open)."""
    return expand(
        f"results/sample_size/{STUDY_RUN}/{{name}}",
        seed=config["seeds"],
        name=name,
        allow_missing=True,
    )


def sample_size_files(name="metrics.json"):
    """Every seed's output of every cell of the study."""
    return [
        sample_size_file(*cell, seed, name)
        for cell in sample_size_cells()
        for seed in config["seeds"]
    ]


def pool_files(wildcards):
    """Each seed's pool of a study cell (none for the fresh stream). A pool of gmm.n_train pairs
    is make_dataset's file: the same draw."""
    if wildcards.pool == "fresh":
        return {}
    if int(wildcards.pool) == config["gmm"]["n_train"]:
        pattern = "results/data/gmm/seed~{seed}/pairs.npz"
    else:
        pattern = "results/sample_size/data/pool~{pool}/seed~{seed}/pairs.npz"
    return {"pairs": expand(pattern, pool=wildcards.pool, seed=config["seeds"])}


def sample_size_train_params(wildcards):
    """The `samples` training keys of train.score, with the cell's learning rate."""
    keys = TRAIN_KEYS + TRAIN_KEYS_BY_OBJECTIVE["samples"]
    keys += TRAIN_KEYS_BY_SCORE[wildcards.score]
    params = {"score": wildcards.score} | {key: config["train"][key] for key in keys}
    return (
        params | {"lr": float(wildcards.lr)} | step_kernels("samples", wildcards.score)
    )
