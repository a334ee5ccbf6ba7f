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
        beta=float(smk.wildcards.beta),
        scale=float(world["scale"].iloc[0]),
        smooth=smk.params.smooth,
        train=guarded(smk.params.train, smk.config),
        tau=smk.params.tau,
        dim=int(smk.wildcards.dim),
        seeds=[int(s) for s in smk.params.seeds],
        threads=smk.threads,
        output=smk.output,
    )
