"""Shim for rule assemble_widths: Experiment W's tables (per cell, width to ε, fits, verdicts)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import (
        widths_verdicts,  # imported inside, so the log times the imports too
    )

    widths_verdicts.run_assemble(
        list(smk.input.metrics),
        list(smk.input.probes),
        smk.params.widths,
        smk.params.cells,
        [int(s) for s in smk.params.seeds],
        smk.params.theory,
        int(smk.params.default_width),
        smk.output,
    )
