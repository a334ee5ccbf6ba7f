# crl-approx: a rerunnable artifact of "Approximation in Contrastive Representation Learning"
# (arXiv 2610.15388). `snakemake --cores all` regenerates every result from config/config.yaml.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


# The paper's setting, found from the Snakefile's folder so that --directory works; a user's
# --configfile / --config is deep-merged on top of it.
configfile: Path(workflow.basedir) / "config" / "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/spectra.smk"
include: "workflow/rules/encoders.smk"
include: "workflow/rules/lcgm.smk"
include: "workflow/rules/noise.smk"
include: "workflow/rules/dynamics.smk"
include: "workflow/rules/sample_size.smk"
include: "workflow/rules/report.smk"


wildcard_constraints:
    seed=r"\d+",
    dim=r"\d+",
    dataset="gmm|lcgm",
    objective="samples|population",
    score="inner|cosine",


rule all:
    default_target: True
    input:
        rules.compute_spectrum.output,
        rules.assemble_table1.output,
        rules.assemble_lcgm.output,
        rules.check_lcgm_design.output,
        rules.assemble_noise.output,
        rules.measure_calibration.output,
        rules.measure_dynamics.output,
        rules.assemble_cosine.output,
        rules.assemble_sample_size.output,
        rules.build_report.output,
