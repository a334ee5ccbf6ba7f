"""Rule assemble_smoothness: Experiment S's tables and claims (crl_approx.analyses.smoothness)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821

with rule_logging(smk):
    from crl_approx.analyses import smoothness

    smoothness.run_assemble(inputs=smk.input, smooth=smk.params.smooth, output=smk.output)
