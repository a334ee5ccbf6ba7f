"""Shim for rule train_digits: every seed of one (pairing, D) cell of Experiment R at once."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.training import digits  # imported inside, so the log times the imports too

    w, p, i = smk.wildcards, smk.params, smk.input
    train = guarded(p.train, smk.config)
    args = (p.digits, train, p.tau, w.pairing, int(w.dim), p.seeds, smk.threads, i.images)
    digits.run(*args, smk.output)
