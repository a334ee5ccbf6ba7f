"""Shim for rule make_pool: a pool of n mixture pairs for one seed, drawn as make_dataset draws."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.models import data  # imported inside, so the log times the imports too

    data.run(dataset="gmm", params=smk.params.data, seed=int(smk.wildcards.seed), output=smk.output)
