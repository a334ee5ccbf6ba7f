"""Shim for rule compute_spectrum: the Gaussian mixture's operator spectrum (Table 1, cols 1–2)."""

from crl_approx.runtime import rule_logging

with rule_logging(snakemake):  # noqa: F821 (injected by Snakemake)
    from crl_approx.numerics import (
        spectrum_rule,  # imported inside, so the log times the imports too
    )

    spectrum_rule.run(gmm=snakemake.params.gmm, tau=snakemake.params.tau, output=snakemake.output)  # noqa: F821
