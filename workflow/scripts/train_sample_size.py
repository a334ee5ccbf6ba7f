"""Shim for rule train_sample_size: every seed of one cell of the sample-size study at once."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.training import cells  # imported inside, so the log times the imports too

    cells.run_sample_size(
        data=smk.params.data,
        train=guarded(smk.params.train, smk.config),
        tau=smk.params.tau,
        dim=int(smk.wildcards.dim),
        seeds=[int(s) for s in smk.params.seeds],
        pool=smk.wildcards.pool,
        steps=int(smk.params.steps),
        threads=smk.threads,
        pairs_paths=list(smk.input.get("pairs", [])),
        output=smk.output,
    )
