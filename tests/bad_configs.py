"""Bad configurations shared by the unit and end-to-end tests.

Each entry: an id, an override that is deep-merged on top of config/config.yaml (exactly what
``--configfile`` does), and the key the error message must name.
"""

BAD_CONFIGS = [
    ("tau_negative", {"tau": -1}, "tau"),
    ("tau_zero", {"tau": 0}, "tau"),
    ("tau_string", {"tau": "0.5"}, "tau"),
    ("sigma_x_negative", {"gmm": {"sigma_x": -1.0}}, "gmm.sigma_x"),
    ("sigma_y_zero", {"gmm": {"sigma_y": 0}}, "gmm.sigma_y"),
    ("mu_y_not_a_number", {"gmm": {"mu_y": "big"}}, "gmm.mu_y"),
    ("prior_one", {"gmm": {"prior": 1.0}}, "gmm.prior"),
    ("dims_empty", {"gmm": {"dims": []}}, "gmm.dims"),
    ("dims_repeated", {"gmm": {"dims": [1, 2, 2]}}, "gmm.dims"),
    ("dims_zero", {"gmm": {"dims": [0, 1]}}, "gmm.dims.0"),
    ("dims_beyond_listed_eigenvalues", {"gmm": {"dims": [1, 40]}}, "gmm.dims"),
    (
        "dims_beyond_computed_eigenvalues",
        {"gmm": {"dims": [1, 25], "quadrature_nodes": 20, "convergence_nodes": 10}},
        "gmm.dims",
    ),
    ("nodes_not_integer", {"gmm": {"quadrature_nodes": 100.5}}, "gmm.quadrature_nodes"),
    ("nodes_too_many", {"gmm": {"quadrature_nodes": 5000}}, "gmm.quadrature_nodes"),
    (
        "convergence_nodes_not_lower",
        {"gmm": {"convergence_nodes": 200}},
        "gmm.convergence_nodes",
    ),
    ("n_eigenvalues_zero", {"gmm": {"n_eigenvalues": 0}}, "gmm.n_eigenvalues"),
    ("misspelt_gmm_key", {"gmm": {"sigmax": 1.0}}, "gmm.sigmax"),
    ("misspelt_top_level_key", {"tua": 0.5}, "tua"),
    ("seeds_empty", {"seeds": []}, "seeds"),
    ("seed_negative", {"seeds": [0, -3]}, "seeds.1"),
    ("gmm_not_a_mapping", {"gmm": "paper"}, "gmm"),
    ("objective_unknown", {"train": {"objectives": ["samples", "magic"]}}, "train.objectives.1"),
    (
        "default_objective_not_run",
        {"train": {"objectives": ["population"], "default_objective": "samples"}},
        "train.default_objective",
    ),
    ("lr_zero", {"train": {"lr": 0}}, "train.lr"),
    ("depth_one", {"train": {"depth": 1}}, "train.depth"),
    ("batch_larger_than_data", {"train": {"batch_size": 200000}}, "train.batch_size"),
    ("schedule_unknown", {"train": {"schedule": "linear"}}, "train.schedule"),
    ("population_steps_below_epochs", {"train": {"population_steps": 5}}, "train.population_steps"),
    ("score_unknown", {"train": {"score": "euclidean"}}, "train.score"),
    ("cosine_scale_zero", {"train": {"cosine_scale": 0}}, "train.cosine_scale"),
    ("lcgm_K_above_d_x", {"lcgm": {"K": 20}}, "lcgm.K"),
    ("lcgm_K_one", {"lcgm": {"K": 1}}, "lcgm.K"),
    ("lcgm_prior_wrong_length", {"lcgm": {"prior": [0.5, 0.5]}}, "lcgm.prior"),
    ("lcgm_prior_word", {"lcgm": {"prior": "flat"}}, "lcgm.prior"),
    ("lcgm_sigma_y_zero", {"lcgm": {"sigma_y": 0}}, "lcgm.sigma_y"),
    ("lcgm_dims_single", {"lcgm": {"dims": [8]}}, "lcgm.dims"),
    ("lcgm_candidates_above_test", {"lcgm": {"n_candidates": 50000}}, "lcgm.n_candidates"),
    ("lcgm_elbow_fraction_one", {"lcgm": {"elbow_fraction": 1.0}}, "lcgm.elbow_fraction"),
    ("lcgm_misspelt_key", {"lcgm": {"means_x": 6.0}}, "lcgm.means_x"),
]


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
