"""Rule assemble_claims: every experiment's claims in one table (crl_approx.analyses.claims)."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821

with rule_logging(smk):
    from crl_approx.analyses import claims

    claims.run(inputs=smk.input, params=smk.params, output=smk.output)
