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
