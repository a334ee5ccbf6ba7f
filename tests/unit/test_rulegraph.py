"""README's picture of the workflow (docs/rulegraph.svg) shows the rules as they are: its stamped
signature is the signature of today's ``snakemake --rulegraph``, and a change of the rules changes
that signature (a stale picture fails here; redraw with python3 -m crl_approx.render.rulegraph)."""

import shutil

from conftest import REPO
from crl_approx.render import rulegraph

DOT = """digraph snakemake_dag {
    0[label = "all", color = "0.00 0.6 0.85", style="rounded"];
    1[label = "make", color = "0.21 0.6 0.85", style="rounded"];
    2[label = "plot", color = "0.11 0.6 0.85", style="rounded"];
    1 -> 0
    2 -> 0
    1 -> 2
}"""


def test_edges_are_read_by_rule_name_not_by_node_id_or_colour():
    expected = [("all", ""), ("all", "make"), ("all", "plot"), ("make", ""), ("plot", "")]
    expected += [("plot", "make")]
    assert rulegraph.edges(DOT) == sorted(expected)
    renumbered = DOT.replace("0[", "9[").replace("-> 0", "-> 9").replace("0.21", "0.99")
    assert rulegraph.signature(renumbered) == rulegraph.signature(DOT)
    assert rulegraph.signature(DOT.replace("    1 -> 2\n", "")) != rulegraph.signature(DOT)


def test_the_committed_picture_shows_todays_rules():
    assert rulegraph.stamped() == rulegraph.signature(rulegraph.rulegraph_dot()), (
        "docs/rulegraph.svg is stale: PYTHONPATH=workflow/scripts python3 -m "
        "crl_approx.render.rulegraph"
    )


def test_a_new_rule_makes_the_picture_stale(tmp_path):
    """A copy of the workflow with one more rule feeding ``all``: its graph's signature is no
    longer the one stamped on the committed picture."""
    for name in ("Snakefile", "workflow", "config", "profiles", "report", "docs"):
        src = REPO / name
        copy = shutil.copytree if src.is_dir() else shutil.copy
        copy(src, tmp_path / name)
    snakefile = tmp_path / "workflow" / "Snakefile"
    text = snakefile.read_text()
    head = "    default_target: True\n    input:\n"
    extra = 'rule write_extra:\n    output:\n        "extra.txt",\n    log:\n        "x.log",\n'
    extra += '    shell:\n        "touch {output}"\n'
    snakefile.write_text(text.replace(head, head + '        "extra.txt",\n', 1) + "\n\n" + extra)
    dot = rulegraph.rulegraph_dot(tmp_path)
    assert ("all", "write_extra") in rulegraph.edges(dot)
    assert rulegraph.signature(dot) != rulegraph.stamped()
