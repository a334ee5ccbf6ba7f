"""Shim for rule assemble_widths: Experiment W's tables (cells, floors, ε, fits, verdicts)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import (
        widths_verdicts,  # imported inside, so the log times the imports too
    )

    widths_verdicts.run_assemble(
        metric_paths=list(smk.input.metrics),
        floor_paths=list(smk.input.floor),
        widths=smk.params.widths,
        cells=smk.params.cells,
        seeds=[int(s) for s in smk.params.seeds],
        design=smk.params.design,
        default_width=int(smk.params.default_width),
        output=smk.output,
    )
