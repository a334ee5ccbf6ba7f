"""Shim for rule assemble_table1: Table 1 with the paper's values and the ratio ours/paper."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import tables  # imported inside, so the log times the imports too

    p = smk.params
    tables.run_table1(
        inputs=smk.input,
        objectives=p.objectives,
        default_objective=p.default_objective,
        output=smk.output,
        setting=p.setting,
    )
