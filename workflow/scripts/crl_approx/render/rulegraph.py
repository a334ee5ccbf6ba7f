"""The picture of the workflow in README: ``snakemake --rulegraph`` drawn by Graphviz into
``docs/rulegraph.svg``, stamped with a signature of the graph (its rule names and edges), so a
test can tell, without Graphviz, that the picture shows the rules as they are.

``python3 -m crl_approx.render.rulegraph`` (from the repository root) redraws it.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
SVG = REPO / "docs" / "rulegraph.svg"
STAMP = re.compile(r"<!-- rulegraph-signature: (?P<sig>[0-9a-f]{64}) -->")
NODE = re.compile(r'^\s*(?P<id>\d+)\s*\[label = "(?P<label>[^"]+)"', re.M)
EDGE = re.compile(r"^\s*(?P<a>\d+) -> (?P<b>\d+)", re.M)


def rulegraph_dot(workdir: Path = REPO, *args: str) -> str:
    """``snakemake --rulegraph`` of the default target, as dot text."""
    out = subprocess.run(
        ["snakemake", "all", "--rulegraph", "dot", *args],
        cwd=workdir,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout[out.stdout.index("digraph") :]


def edges(dot: str) -> list[tuple[str, str]]:
    """The graph as (reader ← input rule) name pairs, sorted; every rule also appears as
    (rule, "") so a rule with no edge still counts. Node ids and colours do not matter."""
    names = {m["id"]: m["label"] for m in NODE.finditer(dot)}
    pairs = {(names[m["b"]], names[m["a"]]) for m in EDGE.finditer(dot)}
    return sorted(pairs | {(name, "") for name in names.values()})


def signature(dot: str) -> str:
    text = "\n".join(f"{a} <- {b}" for a, b in edges(dot))
    return hashlib.sha256(text.encode()).hexdigest()


def stamped(svg: Path = SVG) -> str | None:
    m = STAMP.search(svg.read_text())
    return m["sig"] if m else None


def draw(dot: str, svg: Path = SVG) -> None:
    picture = subprocess.run(
        ["dot", "-Tsvg"], input=dot, check=True, capture_output=True, text=True
    ).stdout
    head, sep, rest = picture.partition("<svg")
    stamp = f"<!-- rulegraph-signature: {signature(dot)} -->\n"
    svg.write_text(head + stamp + sep + rest)


def main() -> None:
    draw(rulegraph_dot())
    sys.stdout.write(f"wrote {SVG} ({stamped()})\n")


if __name__ == "__main__":
    main()
