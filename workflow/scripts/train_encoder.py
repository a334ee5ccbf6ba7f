"""Shim for rule train_encoder: every seed of one (dataset, objective, score, D) cell at once."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.training import cells  # imported inside, so the log times the imports too

    cells.run(
        smk.wildcards.dataset,
        smk.params.data,
        guarded(smk.params.train, smk.config),
        smk.params.tau,
        int(smk.wildcards.dim),
        [int(s) for s in smk.params.seeds],
        smk.wildcards.objective,
        smk.threads,
        list(smk.input.get("pairs", [])),
        smk.output,
        smk.params.early_steps,
    )
