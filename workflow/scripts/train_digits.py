"""Shim for rule train_digits: every seed of one (pairing, D) cell of Experiment R at once."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.training import digits  # imported inside, so the log times the imports too

    w, p, i = smk.wildcards, smk.params, smk.input
    train = guarded(p.train, smk.config)
    digits.run(
        digits=p.digits,
        train=train,
        tau=p.tau,
        pairing=w.pairing,
        dim=int(w.dim),
        seeds=p.seeds,
        threads=smk.threads,
        images_path=i.images,
        output=smk.output,
    )
