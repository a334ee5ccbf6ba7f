"""Shim for rule train_encoder: every seed of one (dataset, objective, score, D) cell at once."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.training import cells  # imported inside, so the log times the imports too

    cells.run(
        dataset=smk.wildcards.dataset,
        data=smk.params.data,
        train=guarded(smk.params.train, smk.config),
        tau=smk.params.tau,
        dim=int(smk.wildcards.dim),
        seeds=[int(s) for s in smk.params.seeds],
        objective=smk.wildcards.objective,
        threads=smk.threads,
        pairs_paths=list(smk.input.get("pairs", [])),
        output=smk.output,
        early_steps=smk.params.early_steps,
    )
