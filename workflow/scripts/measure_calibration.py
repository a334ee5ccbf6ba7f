"""Shim for rule measure_calibration: retrieval excess against contrastive excess, many scores."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import calibration  # imported inside, so the log times the imports too

    calibration.run(
        smk.params.gmm,
        smk.params.tau,
        smk.params.calibration,
        smk.input.metrics,
        smk.input.checkpoints,
        smk.input.noise,
        smk.params.seed,
        smk.output,
    )
