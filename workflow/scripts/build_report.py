"""Shim for rule build_report: the self-contained HTML report."""

from pathlib import Path

from crl_approx.runtime import rule_logging, write_yaml

smk = snakemake  # noqa: F821 (injected by Snakemake)
with rule_logging(smk):
    from crl_approx.render import (
        html as report,  # imported inside, so the log times the imports too
    )

    repo = Path(smk.input.template).resolve().parents[2]  # report/templates/ -> repo root
    report.build(inputs=smk.input, params=smk.params, output=smk.output, repo=repo)
    write_yaml(dict(smk.params.config), smk.output.config)  # what `--report` must describe
