"""README's and docs/'s measured numbers, generated, not typed.

README.md and the pages of docs/ hold their measured prose between markers::

    <!-- BEGIN generated:NAME -->
    …
    <!-- END generated:NAME -->

and each NAME is a macro of ``report/templates/readme.md.j2``, rendered from a default run's
``results/`` and from the tracked benchmark records (``benchmarks/*.json``):
``python3 -m crl_approx.render.readme --run DIR --write`` rewrites every block of every document
(:func:`documents`); a NAME lives in exactly one of them. Fragments whose name starts with
``bench_`` read only the tracked records, so a fast test checks them on every CI run; the
others are checked against a default run (``CRL_DEFAULT_RUN``,
tests/e2e/test_readme_numbers.py).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import jinja2
import numpy as np
import pandas as pd
import yaml

from ..config import load_paper_values
from ..config.sections import TARGETS
from ..numerics import tiers
from ..numerics.asymptotics import asymptotic_slope
from ..numerics.smoothness import FLOOR_GRADIENT
from . import dynamics, facts, glance, records, smoothness, study
from .numbers import e, f, g, minsec, pct, pnum, pow10, protocol, reflow, span, thousands
from .runrecord import anatomy_cells, flop_cells, job_floors, job_times, run_table
from .verdicts import verdict

REPO = Path(__file__).resolve().parents[4]
TEMPLATE = REPO / "report" / "templates" / "readme.md.j2"
RECORDS = REPO / "benchmarks"
PAPER = REPO / "workflow" / "resources" / "paper_values.yaml"
README_FIGURE = REPO / "docs" / "excess_vs_d.svg"  # README's figure, the run's (--write copies it)
#: docs pages that hold no generated block and are not scanned: records of earlier releases, and
#: the derivation whose printed constants tests/unit/test_noise.py checks digit by digit
UNGENERATED_DOCS = ("history.md", "noise_exponent.md")


def documents(repo: Path = REPO) -> list[Path]:
    """The documents whose measured numbers are generated: README.md and the pages of docs/."""
    pages = sorted(p for p in (repo / "docs").glob("*.md") if p.name not in UNGENERATED_DOCS)
    return [repo / "README.md", *pages]


def default_config() -> dict:
    """config/config.yaml, validated, with the schema's defaults filled: as the workflow sees it."""
    from ..config import load_schema, validate_config

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    schema = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    return validate_config(config, schema)


BLOCK = re.compile(
    r"<!-- BEGIN generated:(?P<name>[\w]+) -->\n(?P<body>.*?)<!-- END generated:(?P=name) -->",
    re.S,
)


# --- what the fragments read ---------------------------------------------------------------------


class Run:
    """The tables of one run and the tracked benchmark records, as the template sees them."""

    def __init__(self, results: Path | None, records: Path = RECORDS):
        self.results = results
        self.record = {p.stem: json.loads(p.read_text()) for p in sorted(records.glob("*.json"))}
        self.default_run = self.record.get("default_run", {})

    def __getattr__(self, name):
        """A run's table, read on first use (:data:`.runrecord.TABLES`): a run of some rules only,
        e.g. Experiment R's, renders the blocks it can."""
        results = self.__dict__.get("results")
        if results is None:
            raise AttributeError(name)
        value = run_table(results, name)
        self.__dict__[name] = value
        return value

    @property
    def digits(self):
        """Experiment R's tables and job times, read on first use (:class:`.digits.RunTables`)."""
        from .digits import RunTables

        return self.__dict__.setdefault("_digits", RunTables(self.results, job_times))

    @property
    def run_jobs(self) -> dict:
        """Per rule, this run's own job times and the jobs' own CPU times (its benchmark files
        and logs, :func:`.runrecord.job_times`): the cost of what produced these tables."""
        return self.__dict__.setdefault("_run_jobs", job_times(self.results.parent / "benchmarks"))

    @property
    def widths(self) -> dict:
        """Experiment W's tables (name → DataFrame: "", "_eps", "_fits", "_verdicts", "_floors",
        "_dims")."""
        t = self.results / "tables"
        names = ("", "_eps", "_fits", "_verdicts", "_floors", "_dims")
        return {n: pd.read_csv(t / f"widths{n}.csv") for n in names}

    # jobs of the default run's record (:mod:`.records`)
    def jobs(self, rule: str, pattern: str = "*") -> list[float]:
        return records.jobs(self.default_run, rule, pattern)

    def jobs_s(self, rule: str, pattern: str = "*") -> float:
        return records.jobs_s(self.default_run, rule, pattern)

    def job_s(self, *rules: str, recorded_only: bool = False) -> float:
        return records.job_s(self.default_run, *rules, recorded_only=recorded_only)

    # small lookups that would be clumsy in jinja
    def t1(self, objective: str, dim: int, column: str) -> float:
        return float(self.table1.loc[(objective, dim), column])

    def t1_verdict(self, objective: str, dim: int, column: str = "mlp_excess_risk") -> str:
        r = self.table1.loc[(objective, dim)]
        sd, n = r[f"{column}_sd"], r["n_seeds"]
        return verdict(r[f"{column}_mean"], r[f"paper_{column}"], sd=sd, n=n)[0]

    def t1_verdicts(self, objective: str, dims, columns) -> list[str]:
        """The report's verdicts of ``columns`` at each D of ``dims``, D by D."""
        return [self.t1_verdict(objective, int(d), c) for d in dims for c in columns]

    def spectral_verdicts(self) -> list[str]:
        r = self.table1.loc["population"]
        return [
            verdict(row[col], row[f"paper_{col}"])[0]
            for _, row in r.iterrows()
            for col in ("spectral_tail", "truncation_excess_risk")
        ]

    def study(self, dim: int, protocol: str, budget: int = 1, lr: float | None = None):
        return study.cell(self.sample_size, dim, protocol, budget, lr)

    def study_rows(self, budget: int | None = None, default_lr: bool | None = None):
        s = self.sample_size
        if budget is not None:
            s = s[s["budget_multiplier"] == budget]
        if default_lr is not None:
            s = s[s["is_default_lr"] == default_lr]
        return s

    def reaching(self, max_dim: int) -> list[str]:
        """Protocols that reach the paper (1× budget, default lr) at every D <= max_dim."""
        s = self.study_rows(budget=1, default_lr=True)
        s = s[s["D"] <= max_dim]
        ok = s.groupby("protocol", sort=False)["reaches_paper"].all()
        return ok[ok].index.tolist()

    def seed_excess(self, objective: str, dim: int, score: str = "inner") -> list[float]:
        r = self.runs
        sel = (r["objective"] == objective) & (r["score"] == score) & (r["D"] == dim)
        return r[sel].sort_values("seed")["mlp_excess_risk"].tolist()

    def fit(self, dim: int, name: str):
        return self.fits[(self.fits["D"] == dim) & (self.fits["fit"] == name)].iloc[0]

    def pooled(self, dataset: str):
        n = self.noise
        return n[(n["dataset"] == dataset) & (n["seed"] == -1)].iloc[0]

    def seed_mu_hat(self, dataset: str) -> list[float]:
        """The per-seed μ̂ of ``dataset``, by seed."""
        n = self.noise[(self.noise["dataset"] == dataset) & (self.noise["seed"] >= 0)]
        return n.sort_values("seed")["mu_hat"].tolist()

    def curve_at(self, dataset: str, t: float, column: str) -> float:
        c = self.curve[self.curve["dataset"] == dataset]
        return float(c.iloc[(np.log(c["t"]) - math.log(t)).abs().argmin()][column])

    def curve_slope(self, dataset: str, lo: float, hi: float, column: str) -> float:
        """Least-squares slope of log(column) on log t over lo <= t <= hi."""
        c = self.curve[(self.curve["dataset"] == dataset) & self.curve["t"].between(lo, hi)]
        return float(np.polyfit(np.log(c["t"]), np.log(c[column]), 1)[0])

    def gpu_sd_units(self) -> float:
        """The largest |GPU excess − CPU mean| in CPU seed sds over the GPU check's cells."""
        worst = 0.0
        for c in self.record["gpu_check_h200"]["cells"]:
            cpu = np.asarray(c["cpu_excess"])
            for x in [*c["excess_3_seeds"], c["seed1_alone_excess"]]:
                worst = max(worst, abs(x - cpu.mean()) / cpu.std(ddof=1))
        return worst


# --- rendering and README blocks -----------------------------------------------------------------


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        extensions=["jinja2.ext.do"],
    )
    formats = {"e": e, "f": f, "g": g, "pct": pct, "pnum": pnum, "minsec": minsec, "pow10": pow10}
    env.filters |= formats | {"thousands": thousands, "protocol": protocol}
    env.globals |= formats | {"span": span, "verdict": verdict, "inf": math.inf}
    env.globals |= {"asymptotic_slope": asymptotic_slope, "tier_close": tiers.CLOSE_TOLERANCE}
    env.globals |= {"tiers": tiers, "smoothness_floor_grid": smoothness.floor_grid}
    env.globals |= {"floor_gradient": FLOOR_GRADIENT, "section_targets": TARGETS}
    env.globals |= {"glance": glance.glance, "lr_ratios": study.lr_ratios}
    env.globals |= {"budget_unresolved": study.budget_unresolved, "dynamics_facts": dynamics.says}
    env.globals |= {"dynamics_lcgm_facts": dynamics.lcgm_says, "flop_cells": flop_cells}
    env.globals |= {"anatomy_cells": anatomy_cells, "job_floors": job_floors}
    env.globals |= {"records": records, "facts": facts}
    env.globals |= {"scale": lambda v, k: [k * float(x) for x in v]}
    return env


def fragment_names() -> list[str]:
    """The template's blocks: its macros without arguments (a macro with arguments is a part
    that blocks share)."""
    return sorted(re.findall(r"\{%-?\s*macro\s+(\w+)\(\)", TEMPLATE.read_text()))


def render(
    results: Path | None, config: dict, paper: dict, names=None, records: Path = RECORDS
) -> dict[str, str]:
    """Each fragment's text. With ``results=None`` only the ``bench_`` fragments. The paper's values
    reach the template only where ``config`` is their setting (:func:`..config.paper_in_setting`):
    README and docs describe the default run, which is the paper's setting (tested)."""
    from ..config import paper_in_setting

    if "differs" not in paper:
        paper = paper_in_setting(paper, config)
    run = Run(results, records)
    module = (
        environment()
        .get_template(TEMPLATE.name)
        .make_module({"run": run, "config": config, "paper": paper})
    )
    names = names or [n for n in fragment_names() if results is not None or n.startswith("bench_")]
    return {name: reflow(str(getattr(module, name)()).strip("\n")) + "\n" for name in names}


def blocks(text: str) -> dict[str, str]:
    """A document's generated blocks: name → body."""
    return {m["name"]: m["body"] for m in BLOCK.finditer(text)}


def block_homes(paths=None) -> dict[str, Path]:
    """Each block's document; a name in two places (or twice in one) is an error."""
    homes: dict[str, Path] = {}
    for path in paths or documents():
        for m in BLOCK.finditer(path.read_text()):
            if m["name"] in homes:
                raise ValueError(f"block {m['name']} in {homes[m['name']]} and again in {path}")
            homes[m["name"]] = path
    return homes


def all_blocks(paths=None) -> dict[str, str]:
    """Every generated block of every document: name → body."""
    out: dict[str, str] = {}
    for path in paths or documents():
        out |= blocks(path.read_text())
    block_homes(paths)  # raises on a duplicate
    return out


def fill(text: str, fragments: dict[str, str]) -> str:
    """README with each named block's body replaced by its fragment."""

    def swap(m):
        body = fragments.get(m["name"], m["body"])
        return f"<!-- BEGIN generated:{m['name']} -->\n{body}<!-- END generated:{m['name']} -->"

    return BLOCK.sub(swap, text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write README's generated blocks from a run.")
    ap.add_argument("--run", type=Path, help="folder of a finished default run (holds results/)")
    ap.add_argument(
        "--write",
        type=Path,
        nargs="*",
        help="update these documents in place (none named: README.md and every docs page)",
    )
    ap.add_argument("--records", type=Path, default=RECORDS, help="the benchmark records' folder")
    args = ap.parse_args(argv)
    results = args.run / "results" if args.run else None
    fragments = render(results, default_config(), load_paper_values(PAPER), records=args.records)
    if args.write is not None:
        for path in args.write or documents():
            path.write_text(fill(path.read_text(), fragments))
        if results is not None:  # README's result figure, the run's own file
            README_FIGURE.write_bytes((results / "figures" / README_FIGURE.name).read_bytes())
    else:
        sys.stdout.write("\n".join(fragments.values()))


if __name__ == "__main__":
    main()
