"""Every command block of README.md and docs/*.md marked runnable works when followed literally,
in a copy of the checkout (its tracked and untracked files), in the order the page gives them.

A block is marked by an HTML comment on the line before its fence:
- ``<!-- runnable: run -->``: each command as written;
- ``<!-- runnable: dry -->``: each ``snakemake`` command as a dry run (``-n`` added), and
  ``pip install`` left out (.ci/run's first step is README's install command, on a clean clone);
- ``<!-- runnable: file NAME -->``: the block is written to NAME (a later block reads it);
- ``<!-- runnable: configfile NAME -->``: written to NAME, then ``snakemake -n --configfile NAME``
  must plan it (a configuration example the workflow refuses fails here).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.e2e

MARKED = re.compile(r"<!-- runnable: (\w+)(?: (\S+))? -->\n```\w*\n(.*?)^```", re.S | re.M)
PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]


def blocks(page: str) -> list[tuple[str, str | None, str]]:
    return [m.groups() for m in MARKED.finditer((REPO / page).read_text())]


def commands(body: str) -> list[str]:
    """One command per line; a trailing comment and comment-only lines dropped."""
    out = []
    for line in body.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def dry(command: str) -> str:
    parts = [p.strip() for p in command.split("&&")]
    parts = [p for p in parts if not re.match(r"python3 -m pip install\b", p)]
    return " && ".join(re.sub(r"^snakemake\b", "snakemake -n", p) for p in parts)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the checkout as git sees it (tracked and untracked, not ignored)."""
    dest = tmp_path_factory.mktemp("checkout")
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_the_pages_mark_their_commands():
    """The quick start, the GPU and report commands, the configuration examples and the lint gates
    are marked (a page that loses its markers would pass vacuously)."""
    marked = {page: [kind for kind, _, _ in blocks(page)] for page in PAGES}
    assert marked["README.md"].count("configfile") == 3 and "dry" in marked["README.md"]
    assert "run" in marked["docs/development.md"]
    for page in ("docs/cluster.md", "docs/report.md", "docs/smoothness.md"):
        assert "dry" in marked[page], page


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)])
def test_every_runnable_block_works_when_followed_literally(checkout, page):
    env = dict(os.environ, MPLBACKEND="Agg")
    for kind, name, body in blocks(page):
        if kind in ("file", "configfile"):
            (checkout / name).write_text(body)
            todo = [f"snakemake -n --configfile {name}"] if kind == "configfile" else []
        elif kind == "dry":
            todo = [dry(c) for c in commands(body)]
        else:
            assert kind == "run", f"{page}: unknown marker {kind}"
            todo = commands(body)
        for command in filter(None, todo):
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=checkout,
                capture_output=True,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=600,
            )
            out = proc.stdout + proc.stderr
            assert proc.returncode == 0, f"{page}: `{command}` failed:\n{out[-3000:]}"
