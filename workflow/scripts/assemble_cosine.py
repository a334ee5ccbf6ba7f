"""Shim for rule assemble_cosine: inner-product versus cosine scores on the mixture's D sweep."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import tables  # imported inside, so the log times the imports too

    tables.run_cosine(inputs=smk.input, scores=smk.params.scores, output=smk.output)
