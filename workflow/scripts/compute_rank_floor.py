"""Shim for rule compute_rank_floor: the best achievable rank-D InfoNCE excess on the quadrature."""

from crl_approx.runtime import rule_logging

with rule_logging(snakemake):  # noqa: F821 (injected by Snakemake)
    from crl_approx.numerics import (
        floor as rank_floor,  # imported inside, so the log times the imports too
    )

    rank_floor.run(gmm=snakemake.params.gmm, tau=snakemake.params.tau, output=snakemake.output)  # noqa: F821
