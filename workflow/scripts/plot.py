"""Shim for the plot_* rules: one figure from cached tables (params.kind picks which)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx import plots  # imported inside, so the log times the imports too

    kind, out = smk.params.kind, smk.output.figure
    if kind == "eigenvalues":
        plots.plot_spectrum(smk.input.eigenvalues, smk.input.spectrum, out)
    elif kind == "excess":
        plots.plot_excess(smk.input.table1, out)
    elif kind == "training":
        plots.plot_training_curves(smk.input.metrics, out)
    elif kind == "theory":
        plots.plot_theory(smk.input.table2, out)
    else:
        raise ValueError(f"unknown plot kind {kind!r}")
