"""Shim for rule measure_dynamics: alignment and acquisition order over training checkpoints."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import dynamics  # imported inside, so the log times the imports too

    dynamics.run(
        gmm=smk.params.gmm,
        tau=smk.params.tau,
        dynamics=smk.params.dynamics,
        metric_paths=smk.input.metrics,
        ckpt_paths=smk.input.checkpoints,
        output=smk.output,
        budget_paths=(smk.input.budget_metrics, smk.input.budget_checkpoints),
    )
