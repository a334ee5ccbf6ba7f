# Shared helpers: config validation and repo paths (no rules in this file).
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

REPO = Path(workflow.basedir)
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from crl_approx.config import ConfigError, load_schema, validate_config  # noqa: E402


def repo_path(*parts):
    """A file that ships with the workflow, wherever --directory points."""
    return str(REPO.joinpath(*parts))


# Validate the merged config (config/config.yaml + --configfile + --config) before any job runs.
try:
    _validated = validate_config(
        config, load_schema(repo_path("workflow", "schemas", "config.schema.yaml"))
    )
except ConfigError as err:
    raise WorkflowError(str(err)) from None
config.update(_validated)


# --- parameters: each job sees only the config keys it depends on, so that Snakemake's params
# rerun trigger reruns exactly what a config change affects.
GMM_MODEL_KEYS = ("mu_x", "sigma_x", "mu_y", "sigma_y", "prior")
TRAIN_KEYS = ("width", "depth", "lr", "weight_decay", "schedule", "epochs", "max_loss")
TRAIN_KEYS_BY_OBJECTIVE = {
    "samples": ("batch_size",),
    "population": ("population_nodes", "population_steps"),
}


def gmm_params(*keys):
    """The mixture's parameters plus the named keys of the gmm section."""
    return {key: config["gmm"][key] for key in (*GMM_MODEL_KEYS, *keys)}


def train_params(wildcards):
    """The training keys that one objective depends on."""
    keys = TRAIN_KEYS + TRAIN_KEYS_BY_OBJECTIVE[wildcards.objective]
    return {key: config["train"][key] for key in keys}


def encoder_inputs(wildcards):
    """Sampled pairs for the samples objective; the population objective needs none."""
    if wildcards.objective == "samples":
        return {
            "pairs": f"results/data/{wildcards.dataset}/seed~{wildcards.seed}/pairs.npz"
        }
    return {}


def encoder_metrics(dataset="gmm"):
    """Every training run's metrics for the configured objectives, dims and seeds."""
    return expand(
        "results/encoders/{dataset}/objective~{objective}/dim~{dim}/seed~{seed}/metrics.json",
        dataset=dataset,
        objective=config["train"]["objectives"],
        dim=config[dataset]["dims"],
        seed=config["seeds"],
    )
