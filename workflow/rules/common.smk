# Shared helpers: config validation and the workflow's own paths (no rules in this file).
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.sourcecache import LocalSourceFile

#: this file's folder (workflow/rules) as Snakemake sees it: a local folder, or a git source
RULES_DIR = workflow.current_basedir


def repo_path(*parts):
    """A file that ships with the workflow, found from this file (workflow/rules/common.smk), never
    from the working directory or the deploying workflow: the checkout's own file, or for a
    git-hosted module Snakemake's local copy of it (its source cache, mtime kept)."""
    source = RULES_DIR.join(os.path.join("..", "..", *parts))
    if isinstance(source, LocalSourceFile):
        return os.path.normpath(source.get_path_or_uri(secret_free=True))
    return workflow.sourcecache.get_path(source)


if isinstance(RULES_DIR, LocalSourceFile):
    # A checkout (run in place or as a module by path) runs its own package, here and in the jobs'
    # scripts, even where another clone's crl_approx is installed (an editable install comes
    # before a script's folder on its sys.path).
    SCRIPTS = repo_path("workflow", "scripts")
    sys.path.insert(0, SCRIPTS)
    os.environ.update(
        PYTHONPATH=os.pathsep.join(
            p for p in (SCRIPTS, os.environ.get("PYTHONPATH")) if p
        )
    )
else:  # a git-hosted module: the package comes from the install (requirements.txt: -e .)
    try:
        import crl_approx
    except ModuleNotFoundError:
        raise WorkflowError(
            "crl_approx is not installed: from a clone of crl-approx, "
            "python3 -m pip install -r requirements.txt (README: Use it from your own project)"
        ) from None

from crl_approx.config import (  # noqa: E402
    ConfigError,
    load_paper_values,
    load_schema,
    report_config_errors,
    setting_config,
    subset,
    validate_config,
)
from crl_approx.config.rules import lr_label  # noqa: E402
from crl_approx.render.provenance import tables as provenance_tables  # noqa: E402
from crl_approx.config.sections import (  # noqa: E402
    SECTIONS,
    native_category,
    native_subcategory,
    register,
    targets,
)
from crl_approx.config.experiments import ContractError, Registry  # noqa: E402

#: Snakemake's native report (`snakemake --report`): one category per section of the project's
#: HTML report (results/report/index.html), numbered in its order (crl_approx.config.sections)
REPORT = {key: native_category(key) for key in SECTIONS}


#: the experiment contract (crl_approx.config.experiments): each rules file declares its
#: experiment once, after its rules; rule all, the local rules, the report's inputs and the claims'
#: sources are read from here
EXPERIMENTS = Registry()


def experiment(key, **fields):
    """Declare an experiment (crl_approx.config.experiments.Experiment's fields); its local rules
    run on the submitting host under a cluster executor."""
    try:
        declared = EXPERIMENTS.declare(key, **fields)
    except ContractError as err:
        raise WorkflowError(str(err)) from None
    workflow.localrules(*declared.local)
    return declared


def writer(path):
    """The rule whose outputs hold ``path`` (a declared table's provenance names it)."""
    for defined in workflow.rules:
        if any(str(out) == str(path) for out in defined.output):
            return defined.name
    raise WorkflowError(f"no rule writes {path}")


def section(key, title):
    """An experiment of your own's report section (after the project's): its native category."""
    try:
        return register(key, title)
    except ValueError as err:
        raise WorkflowError(str(err)) from None


def extra_experiments():
    """The rules files of experiments of your own (config key extra_experiments: name → rules
    file, absolute or relative to the working directory), refused before any job when missing.
    """
    files = []
    for name, entry in (config.get("extra_experiments") or {}).items():
        path = os.path.abspath(entry["rules"])
        if not os.path.isfile(path):
            raise WorkflowError(
                f"config key 'extra_experiments.{name}.rules': no such rules file: {path}"
            )
        files.append(path)
    return files


def reported(path, caption, category):
    """A report() output under its section's category, subcategory Tables / Figures / Pages by the
    file's kind."""
    return report(
        path, caption=caption, category=category, subcategory=native_subcategory(path)
    )


def section_targets():
    """{section: every report() output the rules file under its category}: one target rule each
    (the Snakefile, after every rule is defined)."""
    by_category = {}
    for defined in workflow.rules:
        for path in defined.output:
            flag = path.flags.get("report") if hasattr(path, "flags") else None
            if flag is not None:
                by_category.setdefault(flag.category, []).append(str(path))
    return targets(by_category)


#: the plotting code every plot rule lists as an input (an edit reruns the plots, not the numbers)
PLOT_CODE = [
    repo_path("workflow", "scripts", "crl_approx", "figures", name)
    for name in (
        "draw.py",
        "style.py",
        "experiments.py",
        "study.py",
        "dynamics.py",
        "digits.py",
        "widths.py",
        "smoothness.py",
    )
]


def figure_source(plot):
    """A plot rule's name and what it reads (its inputs but the plotting code): the files, or for
    more than three, their common folder and count."""
    files = sorted(str(f) for f in plot.input if str(f) not in PLOT_CODE)
    if len(files) > 3:
        folder = os.path.commonpath(files)
        files = [f"{len(files)} files under {folder}/"]
    return {"rule": plot.rule.name, "reads": ", ".join(files)}


# Validate the merged config (config/config.yaml + --configfile + --config) before any job runs;
# the items of lists and mappings given with --config (strings, as Snakemake passes them) are
# parsed as Snakemake parses a --config scalar.
try:
    _validated = validate_config(
        config,
        load_schema(repo_path("workflow", "schemas", "config.schema.yaml")),
        cli=dict(getattr(workflow.config_settings, "config", None) or {}),
    )
except ConfigError as err:
    raise WorkflowError(str(err)) from None
config.update(_validated)

# `snakemake --report` describes the configuration on its command line: refuse it when results/
# were made with another one (build_report records the run's configuration beside the report).
if any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv):
    _mismatch = report_config_errors("results/report/config.yaml", config)
    if _mismatch:
        raise WorkflowError(_mismatch[0])


# --- parameters: each job sees only the config keys it depends on, so that Snakemake's params
# rerun trigger reruns exactly what a config change affects.
GMM_MODEL_KEYS = ("mu_x", "sigma_x", "mu_y", "sigma_y", "prior")
LCGM_MODEL_KEYS = ("K", "d_x", "d_y", "prior", "mean_x", "sigma_x", "mean_y", "sigma_y")
LCGM_MODEL_KEYS += ("design_seed",)
LCGM_SAMPLE_KEYS = ("n_train", "n_val", "n_probe_fit", "n_probe_test")
#: train.max_loss, a divergence guard, is not among them: the training shims read it from the
#: config (crl_approx.runtime.guarded), so changing it reruns nothing
TRAIN_KEYS = ("width", "depth", "lr", "weight_decay", "schedule", "epochs")
TRAIN_KEYS_BY_OBJECTIVE = {
    "samples": ("batch_size",),
    "population": ("population_nodes", "population_steps"),
}
TRAIN_KEYS_BY_SCORE = {
    "inner": (),
    "cosine": ("cosine_scale", "cosine_scale_learnable"),
}
#: the one objective of the LCGM (no quadrature exists in 16 dimensions)
LCGM_OBJECTIVE = "samples"


#: the settings of paper_values.yaml, read once at parse time
PAPER_SETTINGS = load_paper_values(
    repo_path("workflow", "resources", "paper_values.yaml")
)["settings"]


def paper_setting(*names):
    """The config keys that the named settings of paper_values.yaml name (nested as in the
    config): a table is compared with the paper's values only where these equal the paper's.
    """
    chosen = {name: PAPER_SETTINGS[name] for name in names}
    return setting_config({"settings": chosen}, config)


def gmm_params(*keys):
    """The mixture's parameters plus the named keys of the gmm section."""
    return {key: config["gmm"][key] for key in (*GMM_MODEL_KEYS, *keys)}


def lcgm_params(*keys):
    """The LCGM's parameters plus the named keys of the lcgm section."""
    return {key: config["lcgm"][key] for key in (*LCGM_MODEL_KEYS, *keys)}


def dataset_params(wildcards):
    """What sampling one dataset's pairs depends on."""
    if wildcards.dataset == "gmm":
        return gmm_params("n_train", "n_val")
    return lcgm_params(*LCGM_SAMPLE_KEYS)


def training_data_params(wildcards):
    """What training on one dataset reads from its config section."""
    if wildcards.dataset == "gmm":
        return gmm_params("quadrature_nodes")
    return lcgm_params("n_checkpoint")


def step_kernels(objective, score="inner"):
    """train.step_kernels for the steps it changes (the sampled step of the inner score, the
    population step of either score): changing it reruns those cells alone.
    """
    if objective == "samples" and score != "inner":
        return {}
    return {"step_kernels": config["train"]["step_kernels"]}


def train_params(wildcards):
    """The training keys that one objective and score depend on."""
    keys = TRAIN_KEYS + TRAIN_KEYS_BY_OBJECTIVE[wildcards.objective]
    keys += TRAIN_KEYS_BY_SCORE[wildcards.score]
    train = {"score": wildcards.score} | {key: config["train"][key] for key in keys}
    return train | step_kernels(wildcards.objective, wildcards.score)


def encoder_inputs(wildcards):
    """Every seed's sampled pairs for the samples objective; the population objective needs
    none."""
    if wildcards.objective == "samples":
        return {
            "pairs": expand(
                "results/data/{dataset}/seed~{seed}/pairs.npz",
                dataset=wildcards.dataset,
                seed=config["seeds"],
            )
        }
    return {}


def seed_files(name):
    """One file per seed of a training cell (the cell's wildcards stay open): a job writes one
    sub-folder per seed."""
    return expand(
        "results/encoders/{dataset}/objective~{objective}/score~{score}/dim~{dim}/seed~{seed}/{name}",
        seed=config["seeds"],
        name=name,
        allow_missing=True,
    )


def table1_runs():
    """(objective, score) of Table 1's runs: every configured objective with train.score."""
    return [(o, config["train"]["score"]) for o in config["train"]["objectives"]]


def lcgm_runs():
    """(objective, score) of the LCGM sweep: sampled pairs, train.score."""
    return [(LCGM_OBJECTIVE, config["train"]["score"])]


def encoder_files(dataset, runs, name):
    """One file (metrics.json, checkpoints.npz) of every training run of ``dataset`` for the
    given (objective, score) pairs, every D of the dataset's sweep and every seed."""
    return [
        f"results/encoders/{dataset}/objective~{o}/score~{s}/dim~{d}/seed~{seed}/{name}"
        for o, s in runs
        for d in config[dataset]["dims"]
        for seed in config["seeds"]
    ]
