"""The paper artifact: one self-contained HTML file (inline CSS, base64 figures, no scripts).

Rendered from report/templates/index.html.j2 with jinja2. Every number shown is read from results/;
the paper's numbers come from workflow/resources/paper_values.yaml.
"""

from __future__ import annotations

import base64
import glob
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

import jinja2
import pandas as pd
import yaml

from ..config import load_paper_values, paper_in_setting
from ..numerics import tiers
from ..runtime import atomic_path
from . import digits as digits_report
from . import dynamics, glance, pages, provenance, smoothness, study, summary, widths
from .sections import (
    calibration_context,
    cosine_context,
    lcgm_context,
    noise_context,
    table2,
)
from .verdicts import cell, fmt

PACKAGES = ("snakemake", "numpy", "scipy", "pandas", "torch", "matplotlib", "jinja2")


def _num(row, col):
    value = row.get(col)
    return None if value is None or pd.isna(value) else float(value)


def table1_rows(table: pd.DataFrame) -> list[dict]:
    """One row per D: the spectral cells and, per objective (the table's ``objective`` column),
    the MLP cells."""
    rows = []
    for d, sub in table.groupby("D", sort=True):
        r = sub.iloc[0]
        note = "not the paper's setting" if isinstance(r.get("paper_note"), str) else ""
        row = {
            "D": int(d),
            "tail": cell(_num(r, "spectral_tail"), _num(r, "paper_spectral_tail"), note=note),
            "trunc": cell(
                _num(r, "truncation_excess_risk"),
                _num(r, "paper_truncation_excess_risk"),
                note=note,
            ),
            "floor": fmt(_num(r, "rank_d_floor_excess_risk")),
            "mlp": {},
        }
        for _, m in sub.iterrows():
            over = _num(m, "mlp_excess_over_floor")
            n = int(_num(m, "n_seeds") or 0)
            row["mlp"][m["objective"]] = {
                "l2": cell(
                    _num(m, "mlp_l2_distance_mean"),
                    _num(m, "paper_mlp_l2_distance"),
                    _num(m, "mlp_l2_distance_sd"),
                    note,
                    n,
                ),
                "excess": cell(
                    _num(m, "mlp_excess_risk_mean"),
                    _num(m, "paper_mlp_excess_risk"),
                    _num(m, "mlp_excess_risk_sd"),
                    note,
                    n,
                ),
                "over_floor": "—" if over is None else f"{over:.3g}",
                "n": n,
            }
        rows.append(row)
    return rows


def img(path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"data:image/svg+xml;base64,{data}"


def git_state(repo: Path) -> dict:
    def git(*args):
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown (not a git checkout)", "dirty": bool(status)}


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    cpu = cpu_name()
    gpu = None
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        gpu = proc.stdout.strip() or None if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "gpu": gpu or "none visible",
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def package_versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def benchmark_rows(root: str | Path = "benchmarks") -> pd.DataFrame:
    """One row per job from Snakemake's benchmark files under ``root`` (the last line of each):
    ``rule`` (the first folder), ``job`` (the file's path below ``root``, without .tsv), ``s`` and
    ``max_rss``."""
    rows = []
    for path in sorted(glob.glob(os.path.join(root, "**", "*.tsv"), recursive=True)):
        rel = Path(path).relative_to(root)
        bench = pd.read_csv(path, sep="\t")
        rows.append(
            {"rule": rel.parts[0], "job": str(rel.with_suffix(""))}
            | {"s": float(bench["s"].iloc[-1]), "max_rss": bench["max_rss"].iloc[-1]}
        )
    return pd.DataFrame(rows, columns=["rule", "job", "s", "max_rss"])


def benchmark_table(root: str = "benchmarks") -> list[dict]:
    """Per rule: jobs, total and max wall time, max memory, from Snakemake's benchmark files."""
    df = benchmark_rows(root)
    if df.empty:
        return []
    agg = df.groupby("rule").agg(
        jobs=("s", "size"), total_s=("s", "sum"), max_s=("s", "max"), max_rss=("max_rss", "max")
    )
    return [
        {
            "rule": rule,
            "jobs": int(r["jobs"]),
            "total_s": f"{r['total_s']:.1f}",
            "max_s": f"{r['max_s']:.1f}",
            "max_rss": "—" if pd.isna(r["max_rss"]) else f"{r['max_rss']:.0f}",
        }
        for rule, r in agg.iterrows()
    ]


def own_sections(inputs, partials: list[dict], glanced: dict, context: dict) -> list[dict]:
    """The sections of experiments of your own, each printed from its own template (a jinja2
    partial: its tables as records by input name, its claims rows, ``cite(table, column, **row)``
    (a number's provenance title: its file, column, row and the experiment's config keys),
    ``fmt``)."""
    out = []
    for part in partials:

        def cite(name, column, _part=part, **row):
            path, rule = getattr(inputs, name), _part["rules"][name]
            return context["src"].title(path, rule, _part["keys"], column, **row)

        path = Path(part["template"])
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(path.parent),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        tables = {n: pd.read_csv(getattr(inputs, n)).to_dict("records") for n in part["tables"]}
        claims = [r for r in glanced["rows"] if r["link"] == part["key"]]
        html = env.get_template(path.name).render(
            tables=tables, claims=claims, cite=cite, fmt=fmt, config=context["config"]
        )
        out.append(
            {
                "key": part["key"],
                "title": part["title"],
                "html": jinja2.utils.markupsafe.Markup(html),
            }
        )
    return out


def build(inputs, params, output, repo: Path) -> str:
    """The ``build_report`` rule: render the template into one HTML file."""
    config = params.config
    stated = load_paper_values(inputs.paper)  # the paper's claims, as printed
    paper = paper_in_setting(stated, config)  # compared only where the setting is the paper's
    t1 = pd.read_csv(inputs.table1)
    spectrum = pd.read_csv(inputs.spectrum)
    checks = pd.read_csv(inputs.crosschecks)
    objectives = list(dict.fromkeys(t1["objective"]))  # the default objective first
    table1 = table1_rows(t1)
    lcgm = lcgm_context(inputs.lcgm_table, inputs.lcgm_elbow, inputs.lcgm_design, paper["lcgm"])
    src = provenance.Sources(config, params.sources)
    noise = pd.read_csv(inputs.noise_table)
    digits = digits_report.context(
        inputs.digits_sweep,
        inputs.digits_elbow,
        inputs.digits_verdicts,
        inputs.digits_table1,
        inputs.digits_classes,
        inputs.digits_cancorr,
    )
    width_ctx = widths.context(
        inputs.widths_table,
        inputs.widths_eps,
        inputs.widths_fits,
        inputs.widths_verdicts,
        inputs.widths_floors,
        inputs.widths_dims,
    )
    smooth = smoothness.context(*smoothness.files(inputs), config["smoothness"]["max_dim"])
    context = {
        "config": config,
        "config_yaml": yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
        "paper": stated,
        "not_paper_setting": paper["differs"],
        "table1": table1,
        "paper_mlp_below": [
            r["D"] for r in stated["table1"] if r["mlp_excess_risk"] <= r["truncation_excess_risk"]
        ],
        "paper_mlp_above": [
            r["D"] for r in stated["table1"] if r["mlp_excess_risk"] > r["truncation_excess_risk"]
        ],
        "summary": summary.summary(
            table1,
            objectives,
            spectrum,
            lcgm,
            noise,
            paper,
            src,
            config["noise"]["ci_level"],
        ),
        "glance": glance.glance(pd.read_csv(inputs.claims)),
        "dynamics": dynamics.context(inputs.dynamics_table),
        "dynamics_lcgm": dynamics.lcgm_context(inputs.dynamics_lcgm_table),
        "src": src,
        "paper_src": src.paper,
        "derived": src.derived,
        "formula_src": provenance.FORMULA_SRC,
        "figure_sources": provenance.figure_sources(
            params.figure_sources, {name: getattr(inputs, name) for name in params.figures}
        ),
        "objectives": objectives,
        "mi": spectrum["mutual_information"].iloc[0],
        "nodes": int(spectrum["quadrature_nodes"].iloc[0]),
        "max_conv": spectrum["convergence_rel_change"].max(),
        "crosschecks": checks.to_dict("records"),
        "table2": table2(pd.read_csv(inputs.table2)),
        "noise": noise_context(noise, paper["noise"], config["noise"]["ci_level"]),
        "calibration": calibration_context(inputs.calibration_table, inputs.calibration_points),
        "cosine": cosine_context(inputs.cosine_table)
        if set(config["ablation"]["scores"]) >= {"inner", "cosine"}
        else None,
        "sample_size": study.context(
            inputs.sample_size_table, inputs.sample_size_fits, config["train"]["default_objective"]
        ),
        "lcgm": lcgm,
        "digits": digits,
        "widths": width_ctx,
        "smoothness": smooth,
        "figures": {name: img(getattr(inputs, name)) for name in params.figures},
        "tier_legend": tiers.legend(config["noise"]["ci_level"]),
        "tier_close": tiers.CLOSE_TOLERANCE,
        "tier_seed_level": tiers.SEED_LEVEL,
        "tier_order": 10**tiers.ORDER_TOLERANCE,
        "git": git_state(repo),
        "machine": machine(),
        "packages": package_versions(),
        "benchmarks": benchmark_table(),
        "fmt": fmt,
        "docs_pages": pages.embedded(inputs.docs),
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(inputs.template).parent),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    context["own_sections"] = own_sections(inputs, params.partials, context["glance"], context)
    context["css"] = jinja2.utils.markupsafe.Markup(Path(inputs.css).read_text(encoding="utf-8"))
    text = env.get_template(Path(inputs.template).name).render(**context)
    with atomic_path(output.html) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return text
