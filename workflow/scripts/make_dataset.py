"""Shim for rule make_dataset: train and validation pairs of the Gaussian mixture for one seed."""

from crl_approx.runtime import rule_logging

with rule_logging(snakemake):  # noqa: F821 (injected by Snakemake)
    from crl_approx import data  # imported inside, so the log times the imports too

    data.run(snakemake.params.gmm, int(snakemake.wildcards.seed), snakemake.output)  # noqa: F821
