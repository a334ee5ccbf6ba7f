"""Shim for rule measure_dynamics: alignment and acquisition order over training checkpoints."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import dynamics  # imported inside, so the log times the imports too

    dynamics.run(
        smk.params.gmm,
        smk.params.tau,
        smk.params.dynamics,
        smk.input.metrics,
        smk.input.checkpoints,
        smk.output,
        (smk.input.budget_metrics, smk.input.budget_checkpoints),
    )
