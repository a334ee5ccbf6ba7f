"""The package's layers point one way: no module imports, even lazily, one that imports it back,
and no module grows past ~300 lines."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "workflow" / "scripts" / "crl_approx"


def import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports anywhere in its body (relative imports)."""
    graph = {}
    for path in PACKAGE.glob("*.py"):
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    edges.add(node.module.split(".")[0])
                else:  # from . import a, b
                    edges.update(alias.name for alias in node.names)
        graph[path.stem] = edges
    return graph


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


def test_no_import_cycles_in_the_package():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_data_model_does_not_import_the_trained_towers():
    graph = import_graph()
    assert not graph["lcgm"] & {"towers", "probes", "cells", "training"}
    assert not graph["data"] & {"towers", "training", "cells"}


def test_no_module_over_about_300_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 320} == {}
