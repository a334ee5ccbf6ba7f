"""Shim for rule check_lcgm_design: anchor cleanliness, Bayes accuracies and the rank-K check."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.models import lcgm  # imported inside, so the log times the imports too

    lcgm.run_design(lcgm=smk.params.lcgm, output=smk.output)
