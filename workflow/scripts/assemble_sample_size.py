"""Shim for rule assemble_sample_size: the study's table, decomposition, fits and verdicts."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import sample_size  # imported inside, so the log times the imports too

    sample_size.run(inputs=smk.input, params=smk.params, output=smk.output)
