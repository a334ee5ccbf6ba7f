"""Shim for rule train_encoder: one two-tower model per (dataset, objective, score, D, seed)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx import encoders  # imported inside, so the log times the imports too

    encoders.run(
        smk.wildcards.dataset,
        smk.params.data,
        smk.params.train,
        smk.params.tau,
        int(smk.wildcards.dim),
        int(smk.wildcards.seed),
        smk.wildcards.objective,
        smk.threads,
        smk.input.get("pairs"),
        smk.output,
    )
