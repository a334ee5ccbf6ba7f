"""Per-number provenance: every numeric cell of the report names its source, and the sources lead
back to the stored numbers (at the precision printed)."""

import math
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.e2e
NUMBER = re.compile(r"[-−+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
NUMERIC_CELL = re.compile(r"^[\s\[(+\-−]*\d")


class Cells(HTMLParser):
    """Every <td>: its title and its text."""

    def __init__(self):
        super().__init__()
        self.cells, self._open = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._open.append([dict(attrs).get("title"), ""])

    def handle_endtag(self, tag):
        if tag == "td" and self._open:
            self.cells.append(tuple(self._open.pop()))

    def handle_data(self, data):
        if self._open:
            self._open[-1][1] += data


def numeric_cells(html: str) -> list[tuple[str | None, str]]:
    parser = Cells()
    parser.feed(html)
    return [(title, text.strip()) for title, text in parser.cells if NUMERIC_CELL.match(text)]


def fields(title: str) -> dict:
    return dict(part.split(": ", 1) for part in title.split("; ") if ": " in part)


def printed(text: str) -> tuple[float, float]:
    """The first number of a cell and half a unit of its last printed digit."""
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)  # 10,000,000
    token = NUMBER.search(text).group(0).replace("−", "-")
    mantissa, _, exponent = token.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(token), 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def matches(value: str, stored) -> bool:
    try:
        return math.isclose(float(value), float(stored), rel_tol=1e-6, abs_tol=1e-12)
    except ValueError:
        return str(value) == str(stored)


def stored_value(workdir: Path, f: dict):
    """The number a title points at, or None where it names no file cell to follow."""
    source = f["source"].split(" ", 1)[0]
    if source.endswith(".yaml") and "key" in f:
        data = (
            yaml.safe_load((workdir / source).read_text()) if (workdir / source).exists() else None
        )
        if data is None:
            from conftest import REPO

            data = yaml.safe_load((REPO / source).read_text())
        for part in f["key"].split("."):
            data = data[part]
        return data
    if not source.endswith(".csv"):
        return None
    table = pd.read_csv(workdir / source)
    if "row" in f:
        for pair in f["row"].split(", "):
            key, value = pair.split("=", 1)
            table = table[[matches(value, v) for v in table[key]]]
    assert len(table) == 1, (f, len(table))
    return table[f["column"].split(", ")[0]].iloc[0]


def check_provenance(workdir: Path) -> int:
    html = (workdir / "results" / "report" / "index.html").read_text()
    cells = numeric_cells(html)
    assert len(cells) > 100
    unsourced = [text for title, text in cells if not title]
    assert unsourced == [], unsourced[:10]
    followed = 0
    for title, text in cells:
        f = fields(title)
        if "source" not in f or "derived" in f:
            continue
        value = stored_value(workdir, f)
        if value is None or isinstance(value, str):
            continue
        number, half_ulp = printed(text)
        assert abs(number - float(value)) <= half_ulp * (1 + 1e-9), (title, text, value)
        assert f.get("rule") or "paper_values" in f["source"], title
        followed += 1
    return followed


def test_every_number_of_the_smoke_report_leads_back_to_its_file(smoke_run):
    assert check_provenance(smoke_run) > 250
    html = (smoke_run / "results" / "report" / "index.html").read_text()
    # every figure names its rule, its tables and the command that regenerates it
    assert html.count("regenerate:\n  <code>snakemake --cores all --forcerun plot_") == 18
    regen = re.findall(
        r"repository root: <code>(snakemake --cores all --forcerun [^<]*)</code>", html
    )
    assert len(regen) == 14  # one per section, each rebuilding its inputs and then the report
    assert all(c.endswith("results/report/index.html") and " -- " in c for c in regen)


def test_a_perturbed_number_is_caught(smoke_run, tmp_path):
    # the checker must fail when a stored number no longer matches the printed one
    import shutil

    work = tmp_path / "copy"
    shutil.copytree(smoke_run / "results", work / "results")
    table = pd.read_csv(work / "results" / "tables" / "table1.csv")
    table.loc[0, "spectral_tail"] *= 1.01
    table.to_csv(work / "results" / "tables" / "table1.csv", index=False)
    with pytest.raises(AssertionError):
        check_provenance(work)


@pytest.mark.skipif(
    not os.environ.get("CRL_DEFAULT_RUN"),
    reason="set CRL_DEFAULT_RUN to the folder of a finished default run to check its report",
)
def test_every_number_of_the_default_report_leads_back_to_its_file():
    assert check_provenance(Path(os.environ["CRL_DEFAULT_RUN"])) > 500
