"""Shim for rule measure_calibration: retrieval excess against contrastive excess, many scores."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import calibration  # imported inside, so the log times the imports too

    calibration.run(
        gmm=smk.params.gmm,
        tau=smk.params.tau,
        calibration=smk.params.calibration,
        metric_paths=smk.input.metrics,
        ckpt_paths=smk.input.checkpoints,
        noise_table=smk.input.noise,
        seed=smk.params.seed,
        output=smk.output,
    )
