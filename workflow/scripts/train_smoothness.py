"""Shim for rule train_smoothness: every seed of one (world β, D) cell (Experiment S)."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    import pandas as pd  # imported inside: the log times the imports

    from crl_approx.analyses import smoothness_cells

    world = pd.read_csv(smk.input.world)
    if len(world) != 1:
        raise ValueError(f"{smk.input.world}: expected one world row, found {len(world)}")
    smoothness_cells.run_cell(
        float(smk.wildcards.beta),
        float(world["scale"].iloc[0]),
        smk.params.smooth,
        guarded(smk.params.train, smk.config),
        smk.params.tau,
        int(smk.wildcards.dim),
        [int(s) for s in smk.params.seeds],
        smk.threads,
        smk.output,
    )
