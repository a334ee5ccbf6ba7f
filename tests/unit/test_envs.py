"""envs/*.yaml mirror the pins of requirements.txt, and every rule's conda env exists."""

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
# conda-forge names that differ from PyPI names
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib", "pytorch": "torch"}


def requirement_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
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
    text = (REPO / "requirements.txt").read_text()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
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
