"""The Snakemake workflow catalogue's view of the repository: its layout, its metadata file
(.snakemake-workflow-catalog.yml, only claims tested here), the licence and the version."""

import re
import tomllib

import yaml

from conftest import REPO


def test_the_catalogue_layout():
    # the catalogue reads workflow/Snakefile whenever workflow/ exists, and config/README.md
    assert (REPO / "workflow" / "Snakefile").is_file()
    assert (REPO / "config" / "README.md").is_file()
    assert 'include: "workflow/Snakefile"' in (REPO / "Snakefile").read_text()


def test_every_catalogue_claim_is_tested_here():
    usage = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert set(usage) == {"mandatory-flags", "software-stack-deployment", "report"}
    # report: true is test_snakemake_report_bundles_the_figures_and_tables
    assert usage["report"] is True
    report_test = (REPO / "tests" / "e2e" / "test_report.py").read_text()
    assert '"--report"' in report_test and '"System Message" not in' in report_test
    # no software stack is claimed: no test builds the conda envs or a container
    assert not any(usage["software-stack-deployment"].values())


def test_licence_and_version():
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    changelog = (REPO / "CHANGELOG.md").read_text()
    newest = re.search(r"^## (\S+)", changelog, re.M).group(1)
    assert newest == project["version"], (newest, project["version"])
    import crl_approx

    assert crl_approx.__version__ == project["version"]
