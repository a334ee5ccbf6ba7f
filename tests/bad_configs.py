"""Bad configurations shared by the unit and end-to-end tests.

Each entry: an id, an override that is deep-merged on top of config/config.yaml (exactly what
``--configfile`` does), and the key the error message must name. The entries after "issue 27"
were each accepted by the validator before it (then failed inside a job, wrote NaN, or ran away).
"""

NAN, INF = float("nan"), float("inf")

BAD_CONFIGS = [
    ("tau_negative", {"tau": -1}, "tau"),
    ("tau_zero", {"tau": 0}, "tau"),
    ("tau_string", {"tau": "0.5"}, "tau"),
    ("sigma_x_negative", {"gmm": {"sigma_x": -1.0}}, "gmm.sigma_x"),
    ("sigma_y_zero", {"gmm": {"sigma_y": 0}}, "gmm.sigma_y"),
    ("mu_y_not_a_number", {"gmm": {"mu_y": "big"}}, "gmm.mu_y"),
    ("step_kernels_unknown", {"train": {"step_kernels": "blas"}}, "train.step_kernels"),
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
    # --- issue 27: every number finite (a range check is false for NaN; most keys had no maximum)
    ("tau_nan", {"tau": NAN}, "tau"),
    ("tau_inf", {"tau": INF}, "tau"),
    ("mu_x_inf", {"gmm": {"mu_x": INF}}, "gmm.mu_x"),
    ("mu_y_minus_inf", {"gmm": {"mu_y": -INF}}, "gmm.mu_y"),
    ("sigma_x_nan", {"gmm": {"sigma_x": NAN}}, "gmm.sigma_x"),
    ("prior_nan", {"gmm": {"prior": NAN}}, "gmm.prior"),
    ("lr_nan", {"train": {"lr": NAN}}, "train.lr"),
    ("lr_inf", {"train": {"lr": INF}}, "train.lr"),
    ("max_loss_nan", {"train": {"max_loss": NAN}}, "train.max_loss"),
    ("max_loss_inf", {"train": {"max_loss": INF}}, "train.max_loss"),
    ("lcgm_prior_with_nan", {"lcgm": {"prior": [NAN] + [1 / 7] * 7}}, "lcgm.prior.0"),
    ("lcgm_mean_y_nan", {"lcgm": {"mean_y": NAN}}, "lcgm.mean_y"),
    ("noise_window_nan", {"noise": {"window": [NAN, 1.0e-3]}}, "noise.window.0"),
    ("theory_eps_nan", {"theory": {"eps": [NAN, 0.1]}}, "theory.eps.0"),
    ("theory_beta_inf", {"theory": {"beta": INF}}, "theory.beta"),
    ("dynamics_budget_dims_outside", {"dynamics": {"budget_dims": [3]}}, "dynamics.budget_dims"),
    ("dynamics_budget_check_zero", {"dynamics": {"budget_check": 0}}, "dynamics.budget_check"),
    ("other_lr_nan", {"sample_size": {"other_lrs": [0.003, NAN]}}, "sample_size.other_lrs.1"),
    (
        "capture_threshold_nan",
        {"dynamics": {"capture_threshold": NAN}},
        "dynamics.capture_threshold",
    ),
    # --- finite is not enough: values whose arithmetic overflows
    ("tau_tiny", {"tau": 1e-300}, "tau"),
    ("mu_x_huge", {"gmm": {"mu_x": 1e300}}, "gmm.mu_x"),
    ("sigma_y_tiny", {"gmm": {"sigma_y": 1e-300}}, "gmm.sigma_y"),
    ("lcgm_sigma_x_tiny", {"lcgm": {"sigma_x": 1e-300}}, "lcgm.sigma_x"),
    ("theory_eps_tiny", {"theory": {"eps": [1e-300, 0.1]}}, "theory.eps"),
    ("theory_beta_tiny", {"theory": {"beta": 0.01}}, "theory.eps"),
    # --- sizes and seeds with a maximum a real use could need
    ("n_train_1e12", {"gmm": {"n_train": 10**12}}, "gmm.n_train"),
    ("width_1e6", {"train": {"width": 10**6}}, "train.width"),
    ("seed_2_64", {"seeds": [0, 2**64]}, "seeds.1"),
    ("seed_2_32", {"seeds": [2**32]}, "seeds.0"),
    ("design_seed_2_64", {"lcgm": {"design_seed": 2**64}}, "lcgm.design_seed"),
    ("lr_above_one", {"train": {"lr": 5.0}}, "train.lr"),
    ("digits_lr_zero", {"digits": {"lr": 0}}, "digits.lr"),
    ("digits_lr_above_one", {"digits": {"lr": 2.0}}, "digits.lr"),
    ("digits_halves_lr_nan", {"digits": {"halves_lr": NAN}}, "digits.halves_lr"),
    ("digits_schedule_unknown", {"digits": {"schedule": "linear"}}, "digits.schedule"),
    ("other_lr_1e20", {"sample_size": {"other_lrs": [1e20]}}, "sample_size.other_lrs.0"),
    (
        "other_lrs_share_a_path_label",
        {"sample_size": {"other_lrs": [0.003, 0.0030000001]}},
        "sample_size.other_lrs.1",
    ),
    # --- cross-key rules once checked inside jobs (make_digits, train_digits, probes, the study)
    (
        "digits_halves_candidates_above_held_out",
        {"digits": {"halves_candidates": 5000}},
        "digits.halves_candidates",
    ),
    (
        "digits_n_candidates_above_test_pairs",
        {"digits": {"n_candidates": 10000}},
        "digits.n_candidates",
    ),
    (
        "digits_checkpoints_above_halves_steps",
        {"digits": {"checkpoints": 500}},
        "digits.checkpoints",
    ),
    (
        "digits_checkpoints_above_steps",
        {"digits": {"steps": 600, "checkpoints": 700, "halves_steps": 800}},
        "digits.checkpoints",
    ),
    (
        "digits_grouping_steps_zero",
        {
            "digits": {
                "groupings": [
                    {"groups": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], "dims": [1, 2, 3], "steps": 0}
                ]
            }
        },
        "digits.groupings.0.steps",
    ),
    (
        "digits_checkpoints_above_a_groupings_steps",
        {
            "digits": {
                "groupings": [
                    {"groups": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], "dims": [1, 2, 3], "steps": 5}
                ]
            }
        },
        "digits.checkpoints",
    ),
    ("digits_batch_above_train_images", {"digits": {"batch_size": 2000}}, "digits.batch_size"),
    (
        "digits_grouping_missing_a_digit",
        {"digits": {"groupings": [{"groups": [[0, 1], [2, 3, 4, 5, 6, 7, 8]], "dims": [1, 2]}]}},
        "digits.groupings.0.groups",
    ),
    (
        "digits_grouping_repeated_digit",
        {
            "digits": {
                "groupings": [{"groups": [[0, 1, 2], [2, 3, 4, 5, 6, 7, 8, 9]], "dims": [1, 2]}]
            }
        },
        "digits.groupings.0.groups",
    ),
    (
        "digits_two_groupings_same_K",
        {
            "digits": {
                "groupings": [
                    {"groups": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], "dims": [1, 2]},
                    {"groups": [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]], "dims": [1, 2]},
                ]
            }
        },
        "digits.groupings.1.groups",
    ),
    (
        "digits_fractions_leave_no_held_out",
        {"digits": {"train_fraction": 0.7, "val_fraction": 0.3}},
        "digits.val_fraction",
    ),
    (
        "digits_val_fraction_leaves_one_image",
        {"digits": {"val_fraction": 0.004}},
        "digits.val_fraction",
    ),
    # validation averages over full batches: fewer pairs than a batch gave val_loss 0.0
    ("batch_above_gmm_n_val", {"gmm": {"n_val": 256}}, "train.batch_size"),
    ("batch_above_lcgm_n_val", {"lcgm": {"n_val": 256}}, "train.batch_size"),
    ("digits_batch_above_val_pairs", {"digits": {"n_val_pairs": 100}}, "digits.batch_size"),
    ("digits_batch_above_val_images", {"digits": {"val_fraction": 0.1}}, "digits.batch_size"),
    ("lcgm_n_checkpoint_above_n_val", {"lcgm": {"n_checkpoint": 30000}}, "lcgm.n_checkpoint"),
    (
        "study_without_protocol",
        {"sample_size": {"pools": [], "fresh": False, "lr_protocols": []}},
        "sample_size.pools",
    ),
    # --- Experiment W (issue 29)
    ("widths_gmm_dim_beyond_eigenvalues", {"widths": {"gmm_dim": 40}}, "widths.gmm_dim"),
    (
        "widths_gmm_objective_unknown",
        {"widths": {"gmm_objective": "exact"}},
        "widths.gmm_objective",
    ),
    ("widths_grid_unknown_world", {"widths": {"grid": {"mnist": [8]}}}, "widths.grid.mnist"),
    ("widths_grid_width_zero", {"widths": {"grid": {"lcgm": [0, 8]}}}, "widths.grid.lcgm.0"),
    ("widths_grid_empty", {"widths": {"grid": {"gmm": []}}}, "widths.grid.gmm"),
    ("widths_tower_unknown", {"widths": {"towers": ["f", "h"]}}, "widths.towers.1"),
    ("widths_eps_one", {"widths": {"eps": [0.1, 1.0]}}, "widths.eps.1"),
    ("widths_gmm_eps_negative", {"widths": {"gmm_eps": [1e-4, -1e-5]}}, "widths.gmm_eps.1"),
    ("widths_gmm_eps_empty", {"widths": {"gmm_eps": []}}, "widths.gmm_eps"),
    # --- Experiment W's re-registered design (issue 36)
    ("widths_lcgm_steps_zero", {"widths": {"lcgm_steps": 0}}, "widths.lcgm_steps"),
    ("widths_lcgm_batch_one", {"widths": {"lcgm_batch": 1}}, "widths.lcgm_batch"),
    ("widths_budget_check_zero", {"widths": {"budget_check": 0}}, "widths.budget_check"),
    (
        "widths_budget_check_scope_unknown",
        {"widths": {"budget_check_scope": "all"}},
        "widths.budget_check_scope",
    ),
    (
        "widths_budget_check_scope_sweeps_without_a_check",
        {"widths": {"budget_check_scope": "sweeps", "budget_check": 1}},
        "widths.budget_check_scope",
    ),
    # the class directions are orthonormal: d >= lcgm.K (8)
    (
        "widths_dim_sweep_below_K",
        {"widths": {"dim_sweep": {"dims": [4]}}},
        "widths.dim_sweep.dims",
    ),
    # the LCGM's own d_x = d_y = 16 is always swept: a repeat of its cells
    (
        "widths_dim_sweep_repeats_the_lcgm",
        {"widths": {"dim_sweep": {"dims": [16]}}},
        "widths.dim_sweep.dims",
    ),
    (
        "widths_dim_sweep_eps_above_one",
        {"widths": {"dim_sweep": {"eps": [1.5]}}},
        "widths.dim_sweep.eps.0",
    ),
    # W5 and W6 read the dimension sweep's levels on the ladder the widths are read on
    (
        "widths_dim_sweep_eps_off_the_ladder",
        {"widths": {"dim_sweep": {"eps": [0.1, 0.05]}}},
        "widths.dim_sweep.eps",
    ),
    # the mixture's floor is the exact rank-D floor, computed at gmm.dims only (1, 2, 4, 8)
    ("widths_gmm_dim_not_in_gmm_dims", {"widths": {"gmm_dim": 3}}, "widths.gmm_dim"),
    # --- Experiment S (issue 38)
    ("smoothness_beta_too_rough", {"smoothness": {"betas": [0.1, 2.0]}}, "smoothness.betas.0"),
    ("smoothness_beta_above_two", {"smoothness": {"betas": [0.5, 2.5]}}, "smoothness.betas.1"),
    ("smoothness_one_world", {"smoothness": {"betas": [1.0], "trained": []}}, "smoothness.betas"),
    (
        "smoothness_mi_zero",
        {"smoothness": {"mutual_information": 0}},
        "smoothness.mutual_information",
    ),
    ("smoothness_low_not_lower", {"smoothness": {"panels_low": 800}}, "smoothness.panels_low"),
    ("smoothness_trained_unknown", {"smoothness": {"trained": [0.7]}}, "smoothness.trained"),
    ("smoothness_max_dim_beyond", {"smoothness": {"max_dim": 200}}, "smoothness.max_dim"),
    ("smoothness_dims_beyond_max", {"smoothness": {"dims": [1, 60]}}, "smoothness.dims"),
    ("smoothness_eps_rising", {"smoothness": {"eps": [0.001, 0.01]}}, "smoothness.eps"),
    ("smoothness_fit_from_too_late", {"smoothness": {"fit_from": 98}}, "smoothness.fit_from"),
    ("smoothness_growth_one", {"smoothness": {"growth": 1.0}}, "smoothness.growth"),
    ("smoothness_tolerance_zero", {"smoothness": {"tolerance": 0}}, "smoothness.tolerance"),
    ("smoothness_panels_too_few", {"smoothness": {"panels": 4}}, "smoothness.panels"),
    ("smoothness_order_zero", {"smoothness": {"order": 0}}, "smoothness.order"),
    (
        "smoothness_few_eigenvalues",
        {"smoothness": {"n_eigenvalues": 4}},
        "smoothness.n_eigenvalues",
    ),
    (
        "smoothness_alpha_from_beyond",
        {"smoothness": {"alpha_from_dim": 60}},
        "smoothness.alpha_from_dim",
    ),
    ("smoothness_train_panels_one", {"smoothness": {"train_panels": 1}}, "smoothness.train_panels"),
    (
        "smoothness_floor_panels_huge",
        {"smoothness": {"floor_panels": 5000}},
        "smoothness.floor_panels",
    ),
    (
        "smoothness_floor_newton_rounds_negative",
        {"smoothness": {"floor_newton_rounds": -1}},
        "smoothness.floor_newton_rounds",
    ),
    (
        "smoothness_floor_iterations_few",
        {"smoothness": {"floor_iterations": 1}},
        "smoothness.floor_iterations",
    ),
    ("smoothness_dims_zero", {"smoothness": {"dims": [0, 2]}}, "smoothness.dims.0"),
    ("smoothness_eps_above_one", {"smoothness": {"eps": [2.0, 0.1]}}, "smoothness.eps.0"),
    # --- the run's estimated work: refused up front (allow_large_run: true lets it run)
    ("study_work_absurd", {"gmm": {"n_train": 10**8}}, "gmm.n_train"),
    ("a_thousand_seeds", {"seeds": list(range(1000))}, "seeds"),
    ("towers_beyond_memory", {"train": {"width": 60000, "depth": 12}}, "train.width"),
]


def deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
