"""Shim for rule make_widths_data: the LCGM's pairs of one seed with lcgm.n_train doubled (the
data check of Experiment W)."""

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
