"""Shim for rule train_widths: every seed of one (world, tower, width, budget) cell (W)."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import widths_cells  # imported inside: the log times the imports

    widths_cells.run_cell(
        world=smk.wildcards.world,
        data=smk.params.data,
        train=guarded(smk.params.train, smk.config),
        tau=smk.params.tau,
        dim=int(smk.params.dim),
        seeds=[int(s) for s in smk.params.seeds],
        objective=smk.params.objective,
        cell={
            "tower": smk.wildcards.tower,
            "width": smk.wildcards.width,
            "budget": smk.wildcards.budget,
        },
        threads=smk.threads,
        pairs_paths=list(smk.input.get("pairs", [])),
        output=smk.output,
        steps=smk.params.steps,
    )
