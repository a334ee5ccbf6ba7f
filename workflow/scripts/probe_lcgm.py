"""Shim for rule probe_lcgm: linear probes, canonical correlations, held-out excess of one run."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx import lcgm  # imported inside, so the log times the imports too

    lcgm.run_probe(
        smk.params.lcgm,
        smk.params.tau,
        int(smk.wildcards.dim),
        int(smk.wildcards.seed),
        smk.input.model,
        smk.input.pairs,
        smk.output,
    )
