"""Shim for rule probe_lcgm: probes and held-out excess of every seed of one D."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import probes  # imported inside, so the log times the imports too

    probes.run_probe(
        lcgm=smk.params.lcgm,
        tau=smk.params.tau,
        dim=int(smk.wildcards.dim),
        seeds=[int(s) for s in smk.params.seeds],
        model_paths=list(smk.input.models),
        pairs_paths=list(smk.input.pairs),
        output=smk.output,
    )
