"""Shim for rule train_widths: every seed of one (world, tower, width, data) cell (Experiment W)."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import widths_cells  # imported inside: the log times the imports

    widths_cells.run_cell(
        smk.wildcards.world,
        smk.params.data,
        guarded(smk.params.train, smk.config),
        smk.params.tau,
        int(smk.params.dim),
        [int(s) for s in smk.params.seeds],
        smk.params.objective,
        {"tower": smk.wildcards.tower, "width": smk.wildcards.width, "data": smk.wildcards.data},
        smk.threads,
        list(smk.input.get("pairs", [])),
        smk.output,
        list(smk.input.get("train_pairs", [])),
        smk.params.steps,
    )
