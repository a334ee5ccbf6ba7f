"""Shim for rule assemble_digits: Experiment R's held-out numbers, tables and verdicts."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import digits_tables

    digits_tables.run_assemble(
        inputs=smk.input, digits=smk.params.digits, tau=smk.params.tau, output=smk.output
    )
