"""Rule compute_smoothness_floor: the best rank-D InfoNCE excess of one world of Experiment S."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821

with rule_logging(smk):
    from crl_approx.numerics import smoothness

    smoothness.run_floor(
        float(smk.wildcards.beta), smk.input.world, smk.params.smooth, smk.params.tau, smk.output
    )
