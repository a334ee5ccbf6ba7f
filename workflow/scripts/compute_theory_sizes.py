"""Shim for rule compute_theory_sizes: the paper's Table 2 rates on the configured ε grid."""

from crl_approx.runtime import rule_logging

with rule_logging(snakemake):  # noqa: F821 (injected by Snakemake)
    from crl_approx.numerics import theory  # imported inside, so the log times the imports too

    theory.run(theory=snakemake.params.theory, output=snakemake.output)  # noqa: F821
