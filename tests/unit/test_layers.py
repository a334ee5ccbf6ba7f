"""The rule of the house: the package's folders are its layers and imports run one way.

    config, runtime, integrity  ←  models  ←  numerics  ←  training, analyses  ←  figures, render

A layer may import its own folder and the layers below it, never one above; ``analyses`` may
import ``training`` (to load trained towers), ``training`` never imports an analysis. Every import
counts, also the lazy ones inside functions. No import cycles, no module past ~300 lines."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "workflow" / "scripts" / "crl_approx"

#: layer → the layers it may import (besides itself)
ALLOWED = {
    "root": set(),
    "models": {"root"},
    "numerics": {"root", "models"},
    "training": {"root", "models", "numerics"},
    "analyses": {"root", "models", "numerics", "training"},
    "figures": {"root", "models", "numerics", "training", "analyses", "render"},
    "render": {"root", "models", "numerics", "training", "analyses", "figures"},
}
LAYERS = set(ALLOWED) - {"root"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    return ".".join(path.relative_to(package).with_suffix("").parts)


def layer_of(module: str) -> str:
    head = module.split(".")[0]
    return head if head in LAYERS else "root"


def resolve(current: str, node: ast.ImportFrom) -> list[str]:
    """The package modules an ``from … import …`` statement in module ``current`` names."""
    if node.level == 0:
        if not (node.module or "").startswith("crl_approx"):
            return []
        base = node.module.split(".")[1:]
    else:
        parts = current.split(".")[:-1]  # the module's package
        up = node.level - 1
        if up > len(parts):
            raise ValueError(f"{current}: relative import beyond the package")
        base = parts[: len(parts) - up] + (node.module.split(".") if node.module else [])
    if node.module is None or (base and base[-1] in LAYERS and len(base) == 1):
        return [".".join([*base, alias.name]) for alias in node.names]
    return [".".join(base)] if base else [alias.name for alias in node.names]


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the package modules it imports anywhere in its body (lazy imports too)."""
    graph = {}
    for path in package.rglob("*.py"):
        current = module_name(path, package)
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                edges.update(resolve(current, node))
            elif isinstance(node, ast.Import):
                edges.update(
                    ".".join(a.name.split(".")[1:])
                    for a in node.names
                    if a.name.startswith("crl_approx.")
                )
        graph[current] = edges
    return graph


def violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        mine = layer_of(module)
        for target in sorted(targets):
            theirs = layer_of(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                found.append(f"{module} ({mine}) imports {target} ({theirs})")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_every_import_points_down_the_layers():
    assert violations(import_graph()) == []


def test_the_graph_sees_every_import_kind():
    """The resolver follows relative imports up and across folders, bare ``from . import x``,
    lazy imports inside functions and absolute ``crl_approx.`` imports."""
    graph = import_graph()
    assert "models.gmm" in graph["numerics.spectrum"]  # from ..models.gmm import …
    assert "render.provenance" in graph["render.html"]  # from . import provenance
    assert "training.towers" in graph["analyses.probes"]  # lazy, inside a function
    assert "training.budget" in graph["training.cells"]
    assert all(module in graph for module in ("config.__init__", "runtime", "models.__init__"))


def test_a_planted_violation_is_caught(tmp_path):
    """An analysis importing the presentation, and a lazy training → analysis import, in a copy
    of the package: the test reports both, naming the modules."""
    import shutil

    copy = tmp_path / "crl_approx"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    probes = copy / "analyses" / "probes.py"
    probes.write_text(probes.read_text() + "\nfrom ..render.verdicts import fmt\n")
    cells = copy / "training" / "cells.py"
    cells.write_text(
        cells.read_text() + "\n\ndef _planted():\n    from ..analyses import sample_size\n"
    )
    found = violations(import_graph(copy))
    assert "analyses.probes (analyses) imports render.verdicts (render)" in found
    assert "training.cells (training) imports analyses.sample_size (analyses)" in found
    assert len(found) == 2


def test_no_import_cycles_in_the_package():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_every_layer_is_a_folder_with_a_docstring_naming_its_modules():
    for layer in LAYERS:
        init = PACKAGE / layer / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        for module in (PACKAGE / layer).glob("*.py"):
            if module.name != "__init__.py":
                assert f"``{module.stem}``" in doc, f"{init} does not name {module.stem}"
    flat = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert flat == {"runtime", "integrity"}, flat
    # config (the root layer's validation) is a folder too: schema, cross-key rules, estimates
    doc = ast.get_docstring(ast.parse((PACKAGE / "config" / "__init__.py").read_text())) or ""
    for module in (PACKAGE / "config").glob("*.py"):
        if module.name != "__init__.py":
            assert f"``{module.stem}``" in doc, f"config/__init__.py does not name {module.stem}"


def test_no_module_name_repeats_its_folder():
    for layer in LAYERS:
        for module in (PACKAGE / layer).glob("*.py"):
            assert not module.stem.startswith(layer.rstrip("s")), module


def test_no_module_over_about_300_lines():
    sizes = {
        str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 320} == {}
