"""Shim for rule compute_digits_operator: the exact class operator of every grouping."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import digits

    digits.run_classes(digits=smk.params.digits, tau=smk.params.tau, output=smk.output)
