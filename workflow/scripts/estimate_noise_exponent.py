"""Shim for rule estimate_noise_exponent: Monte Carlo of P(|r(x,y) − r(x,y')| ≤ t), one dataset
and seed."""

from crl_approx.runtime import rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import noise_mc  # imported inside, so the log times the imports too

    noise_mc.run(
        dataset=smk.wildcards.dataset,
        params=smk.params.data,
        noise=smk.params.noise,
        seed=int(smk.wildcards.seed),
        output=smk.output,
    )
