"""The docs pages the report's sections point to, carried inside the report.

A link to ``../../docs/PAGE.md`` works only beside the checkout; the report is read elsewhere
(Snakemake's report zip, a web server, a module user's folder). So each linked page travels in the
report's appendix, as its Markdown text, and the sections link to it in the page (``#docs-PAGE``).
"""

import re
from pathlib import Path

#: how the report's template names a page (its docs_page macro)
LINK = re.compile(r"\{\{ docs_page\('([\w.]+)'\) \}\}")


def linked(template_text: str) -> list[str]:
    """The docs pages a template's sections link, in order of first link."""
    return list(dict.fromkeys(LINK.findall(template_text)))


def anchor(page: str) -> str:
    """The in-report id of a page: docs-table1 for table1.md."""
    return "docs-" + Path(page).stem.replace("_", "-")


def embedded(paths) -> list[dict]:
    """Each page's name, in-report id and Markdown text (for the report's appendix)."""
    return [
        {"page": Path(p).name, "id": anchor(Path(p).name), "text": Path(p).read_text("utf-8")}
        for p in paths
    ]
