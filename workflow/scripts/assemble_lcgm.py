"""Shim for rule assemble_lcgm: the probe table (mean, sd over seeds per D) and the elbow table."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import probes  # imported inside, so the log times the imports too

    probes.run_assemble(
        probe_paths=smk.input.probes,
        metric_paths=smk.input.metrics,
        paper_path=smk.input.paper,
        lcgm=smk.params.lcgm,
        output=smk.output,
        setting=smk.params.setting,
    )
