# crl-approx from its own clone: `snakemake --cores all` here runs workflow/Snakefile, the entry
# point (a module deployment names that file: README, "Use it from your own project").


include: "workflow/Snakefile"


# An included file's `default_target: True` does not carry over to the including Snakefile
# (Snakemake restores the includer's target after an include), so name it here: the same
# `rule all` (tests/e2e/test_module.py compares the two dry runs).
workflow.default_target = rules.all.rule.name
