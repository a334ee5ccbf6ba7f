"""Shim for Experiment W's training rules (train_widths, train_widths_gmm, train_widths_widest):
every width of one sweep (one tower on one world; or the widest cell), every seed, one job."""

from crl_approx.runtime import guarded, rule_logging

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.analyses import widths_cells  # imported inside: the log times the imports

    widths_cells.run_sweep(
        world=smk.wildcards.world,
        data=smk.params.data,
        seeds=[int(s) for s in smk.params.seeds],
        tower=smk.params.tower,
        widths=[int(w) for w in smk.params.widths],
        budget=smk.params.budget,
        output=smk.output,
        train=guarded(smk.params.train, smk.config),
        tau=smk.params.tau,
        dim=int(smk.params.dim),
        objective=smk.params.objective,
        threads=smk.threads,
        pairs_paths=list(smk.input.get("pairs", [])),
        steps=smk.params.steps,
    )
