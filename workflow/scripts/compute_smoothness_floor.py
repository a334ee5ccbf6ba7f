"""Rule compute_smoothness_floor: the best rank-D InfoNCE excess of one world of Experiment S."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821

with rule_logging(smk):
    from crl_approx.numerics import smoothness

    smoothness.run_floor(
        beta=float(smk.wildcards.beta),
        world_csv=smk.input.world,
        smooth=smk.params.smooth,
        tau=smk.params.tau,
        output=smk.output,
    )
