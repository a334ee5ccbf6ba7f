"""envs/*.yaml mirror the pins of requirements.txt, and every rule's conda env exists."""

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
# conda-forge names that differ from PyPI names
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib", "pytorch": "torch"}
#: the workflow's own package, installed editable from the checkout (run pip from the repository
#: root). envs/*.yaml do not list it: Snakemake copies an env file to .snakemake/conda/ before conda
#: reads it, so no relative path would reach the checkout, and a script finds the package in the
#: workflow's scripts folder, which Snakemake puts on the script's sys.path.
OWN_PACKAGE = "-e ."


def requirement_lines() -> list[str]:
    lines = [
        line.split("#", 1)[0].strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
    ]
    return [line for line in lines if line and line != OWN_PACKAGE]


def requirement_pins() -> dict[str, str]:
    pins = {}
    for line in requirement_lines():
        name, version = line.split("==")
        pins[name.lower()] = version
    return pins


def env_pins(path: Path) -> dict[str, str]:
    env = yaml.safe_load(path.read_text())
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # the pip: sub-list
            for item in dep.get("pip", []):
                name, version = item.split("==")
                pins[name.lower()] = version
        elif "=" in dep:
            name, version = dep.split("=", 1)
            pins[CONDA_TO_PYPI.get(name, name).lower()] = version
    return pins


ENVS = sorted((REPO / "envs").glob("*.yaml"))


def test_every_requirement_is_pinned_exactly():
    for line in requirement_lines():
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9A-Za-z.+]*", line), line
    assert requirement_pins()["torch"] == "2.13.0"


@pytest.mark.parametrize("env", ENVS, ids=[e.name for e in ENVS])
def test_env_pins_match_requirements(env):
    reqs = requirement_pins()
    pins = env_pins(env)
    assert pins.pop("python") == "3.11"
    assert pins, f"{env.name} pins nothing"
    for name, version in pins.items():
        assert name in reqs, f"{env.name}: {name} is not in requirements.txt"
        assert version == reqs[name], f"{env.name}: {name}={version}, requirements {reqs[name]}"


def test_every_conda_directive_points_to_an_existing_env():
    rules = sorted((REPO / "workflow" / "rules").glob("*.smk"))
    found = 0
    for smk in rules:
        for match in re.finditer(r'conda:\s*\n\s*"([^"]+)"', smk.read_text()):
            found += 1
            assert (smk.parent / match.group(1)).resolve().is_file(), (smk.name, match.group(1))
    assert found >= 1


def test_requirements_install_the_workflow_package():
    """requirements.txt installs crl_approx from this checkout (pyproject.toml's project), so the
    workflow imports it also where it runs as a module from git."""
    lines = [
        line.split("#", 1)[0].strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
    ]
    assert OWN_PACKAGE in lines
    assert 'where = ["workflow/scripts"]' in (REPO / "pyproject.toml").read_text()
