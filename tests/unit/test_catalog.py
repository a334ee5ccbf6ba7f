"""The Snakemake workflow catalogue's view of the repository: its layout, its metadata file
(.snakemake-workflow-catalog.yml, only claims tested here), the licence and the version."""

import re
import tomllib

import pytest
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


def test_the_citation_file_names_the_paper_and_this_release():
    """CITATION.cff: the keys CFF 1.2.0 requires (cff-version, message, title, authors, each
    author a name or family name), the version pyproject.toml's, and the preferred citation the
    paper whose arXiv id PAPER.md's reference and the paper-values file use."""
    import yaml

    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert cff[key], key
    for who in cff["authors"] + cff["preferred-citation"]["authors"]:
        assert who.get("name") or who.get("family-names"), who
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert str(cff["version"]) == version
    paper = cff["preferred-citation"]
    arxiv = re.search(r"arXiv (\d{4}\.\d{5})", (REPO / "README.md").read_text()).group(1)
    assert paper["url"].endswith(arxiv) and any(arxiv in i["value"] for i in paper["identifiers"])


def test_every_release_names_the_commit_that_set_its_version():
    """Releases are identified without tags: every CHANGELOG release but the newest names a commit
    (`## X.Y.Z (commit abc1234)`), and at that commit pyproject.toml's version is X.Y.Z (git
    show); the newest is the commit that sets it, which a CHANGELOG cannot name."""
    import subprocess

    heads = re.findall(
        r"^## (\S+)(?: \(commit ([0-9a-f]{7,40})\))?", (REPO / "CHANGELOG.md").read_text(), re.M
    )
    assert len(heads) >= 2
    for version, commit in heads[1:]:
        assert commit, f"release {version} names no commit"
        text = subprocess.run(
            ["git", "show", f"{commit}:pyproject.toml"], cwd=REPO, capture_output=True, text=True
        )
        if text.returncode != 0:
            pytest.skip("no git history here (an exported tree)")
        assert tomllib.loads(text.stdout)["project"]["version"] == version, (version, commit)
