"""Shim for rule measure_dynamics_lcgm: the LCGM sweep's f, g against the exact target spans."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import dynamics_lcgm  # imported inside, so the log times the imports

    i, p = smk.input, smk.params
    dynamics_lcgm.run(
        lcgm=p.lcgm,
        train=p.train,
        alignment_tol=p.alignment_tol,
        metric_paths=i.metrics,
        ckpt_paths=i.checkpoints,
        pairs_paths=i.pairs,
        output=smk.output,
    )
