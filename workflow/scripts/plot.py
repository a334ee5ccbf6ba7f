"""Shim for the plot_* rules: one figure from cached tables (params.kind picks which)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.figures import (
        draw as plots,  # imported inside, so the log times the imports too
    )

    plots.draw(kind=smk.params.kind, inputs=smk.input, params=smk.params, path=smk.output.figure)
