"""Shim for rule assemble_noise: per-seed and pooled fits, pooled curves, mixture asymptotics."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import noise  # imported inside, so the log times the imports too

    noise.run_assemble(
        count_paths=smk.input.counts,
        datasets=smk.params.datasets,
        gmm=smk.params.gmm,
        noise=smk.params.noise,
        paper_path=smk.input.paper,
        output=smk.output,
    )
