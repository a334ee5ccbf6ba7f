"""Rule compute_smoothness: one world of Experiment S, exactly (crl_approx.numerics.smoothness)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821

with rule_logging(smk):
    from crl_approx.numerics import smoothness

    smoothness.run_world(
        beta=float(smk.wildcards.beta),
        smooth=smk.params.smooth,
        tau=smk.params.tau,
        output=smk.output,
    )
