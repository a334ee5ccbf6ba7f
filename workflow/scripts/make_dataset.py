"""Shim for rule make_dataset: the sampled pairs of one dataset (gmm or lcgm) for one seed."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.models import data  # imported inside, so the log times the imports too

    data.run(
        dataset=smk.wildcards.dataset,
        params=smk.params.data,
        seed=int(smk.wildcards.seed),
        output=smk.output,
    )
