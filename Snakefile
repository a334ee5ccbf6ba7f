# crl-approx from its own clone: `snakemake --cores all` here runs workflow/Snakefile, the entry
# point (a module deployment names that file: README, "Use it from your own project").


include: "workflow/Snakefile"
