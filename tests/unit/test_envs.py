"""envs/*.yaml mirror the pins of requirements.txt, and every rule's conda env exists."""

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
# conda-forge names that differ from PyPI names
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib", "pytorch": "torch"}
#: the workflow's own package, installed editable from the checkout: from the repository root
#: (requirements.txt) and from envs/ (conda runs an env's pip in the env file's folder)
OWN_PACKAGE = {"requirements.txt": "-e .", "envs": "-e .."}


def requirement_lines() -> list[str]:
    lines = [
        line.split("#", 1)[0].strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
    ]
    return [line for line in lines if line and line != OWN_PACKAGE["requirements.txt"]]


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
                if item == OWN_PACKAGE["envs"]:
                    continue
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


def _pip_items(env: Path) -> list[str]:
    deps = yaml.safe_load(env.read_text())["dependencies"]
    return [item for dep in deps if isinstance(dep, dict) for item in dep.get("pip", [])]


@pytest.mark.parametrize("env", ENVS, ids=[e.name for e in ENVS])
def test_every_install_installs_the_workflow_package(env):
    """requirements.txt and every env install crl_approx from this checkout (pyproject.toml's
    project), so a rule's script imports it also where the workflow is a module."""
    lines = [
        line.split("#", 1)[0].strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
    ]
    assert OWN_PACKAGE["requirements.txt"] in lines
    assert OWN_PACKAGE["envs"] in _pip_items(env)
    # the path is the folder of pyproject.toml, seen from where pip runs
    assert (env.parent / ".." / "pyproject.toml").resolve() == REPO / "pyproject.toml"
    assert 'where = ["workflow/scripts"]' in (REPO / "pyproject.toml").read_text()
