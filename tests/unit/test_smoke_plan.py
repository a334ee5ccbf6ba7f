"""The smoke workflow's plan (conftest's smoke_plan: the workflow's own dry run), against job counts
worked out here from config/smoke.yaml on top of config/config.yaml by what each rule makes: one
training job per cell (all seeds stacked), one Monte Carlo per dataset and seed, one probe job per
D. The e2e tests compare what ran (logs, SLURM's records, the report's figures) with the plan."""

from conftest import REPO
from crl_approx.config.reruns import merged


def test_the_plan_follows_the_config(smoke_plan):
    c = merged(REPO / "config" / "smoke.yaml")
    seeds, gmm_dims = len(c["seeds"]), len(c["gmm"]["dims"])
    objectives = len(c["train"]["objectives"])
    # Table 1's cells (every objective, train.score), the cosine ablation's other scores on the
    # default objective, the LCGM sweep (one objective)
    extra_scores = len([s for s in c["ablation"]["scores"] if s != c["train"]["score"]])
    train_encoder = objectives * gmm_dims + extra_scores * gmm_dims + len(c["lcgm"]["dims"])
    # Experiment W: per LCGM world (the LCGM and one per d of widths.dim_sweep.dims) one job per
    # tower (its grid widths but train.width) and one widest cell (both towers at train.width,
    # shared by the towers' sweeps), the LCGM's widest cell again at budget_check × the steps
    # when budget_check > 1; on the mixture one job per tower (its widest cell is Table 1's run)
    w, width = c["widths"], c["train"]["width"]

    def sweeps(world):  # one job per tower, all its narrower widths
        return len(w["towers"]) * any(x != width for x in w["grid"].get(world, []))

    lcgm_worlds = (1 + len(w["dim_sweep"]["dims"])) if "lcgm" in w["grid"] else 0
    widest = lcgm_worlds + int(lcgm_worlds > 0 and w["budget_check"] > 1)
    digits = sum(len(g["dims"]) for g in c["digits"]["groupings"]) + len(c["digits"]["halves_dims"])
    s = c["smoothness"]
    expected = {
        "compute_spectrum": 1,
        "make_dataset": 2,  # the mixture's pools and the LCGM's
        "train_encoder": train_encoder,
        "train_encoder_budget": objectives * len(c["dynamics"]["budget_dims"]),
        "probe_lcgm": len(c["lcgm"]["dims"]),
        "estimate_noise_exponent": len(c["noise"]["datasets"]) * seeds,
        "train_widths": lcgm_worlds * sweeps("lcgm"),
        "train_widths_widest": widest,
        "train_widths_gmm": sweeps("gmm"),
        "train_digits": digits,
        "compute_smoothness": len(s["betas"]),
        "compute_smoothness_floor": len(s["betas"]),
        "train_smoothness": len(s["trained"]) * len(s["dims"]),
        "build_report": 1,
        "assemble_claims": 1,
    }
    assert {rule: smoke_plan.get(rule) for rule in expected} == expected
    # every other rule runs once (its assembly or figure)
    others = {r: n for r, n in smoke_plan.items() if r not in expected and r != "train_sample_size"}
    assert set(others.values()) == {1} and len(others) >= 30
    plots = [r for r in smoke_plan if r.startswith("plot_")]
    assert len(plots) >= 18  # every experiment's figures (18 when this test was written)
