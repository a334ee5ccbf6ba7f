# Experiment 5, training dynamics: the input functions and params of its rules (dynamics.smk, which
# includes this file): the convergence gate's budget check, Table 1's runs trained again at
# dynamics.budget_check times the budget.


def budget_train_params(wildcards):
    """train_params at dynamics.budget_check × the budget: train.epochs and, for the population
    objective, train.population_steps (the convergence gate's budget check)."""
    params = train_params(wildcards)
    factor = config["dynamics"]["budget_check"]
    return params | {
        key: params[key] * factor
        for key in ("epochs", "population_steps")
        if key in params
    }


def budget_files(name):
    """One file of every run of the dynamics' budget check: Table 1's runs at dynamics.budget_dims
    (none when dynamics.budget_check is 1)."""
    if config["dynamics"]["budget_check"] <= 1:
        return []
    return [
        f"results/encoders_budget/gmm/objective~{o}/score~{s}/dim~{d}/seed~{seed}/{name}"
        for o, s in table1_runs()
        for d in config["dynamics"].get("budget_dims", [])
        for seed in config["seeds"]
    ]


def budget_seed_files(name):
    """seed_files of the budget check's runs (results/encoders_budget/…)."""
    return [
        f.replace("results/encoders/", "results/encoders_budget/", 1)
        for f in seed_files(name)
    ]
