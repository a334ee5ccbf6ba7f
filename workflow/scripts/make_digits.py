"""Shim for rule make_digits: the bundled digits, split per digit and standardised."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk) as log:
    from crl_approx.models import digits

    log.info("images per split: %s", digits.run(digits=smk.params.digits, output=smk.output))
