"""Shim for rule probe_lcgm: probes and held-out excess of every seed of one D."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import probes  # imported inside, so the log times the imports too

    probes.run_probe(
        smk.params.lcgm,
        smk.params.tau,
        int(smk.wildcards.dim),
        [int(s) for s in smk.params.seeds],
        list(smk.input.models),
        list(smk.input.pairs),
        smk.output,
    )
