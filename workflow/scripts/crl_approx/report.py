"""The paper artifact: one self-contained HTML file (inline CSS, base64 figures, no scripts).

Rendered from report/templates/index.html.j2 with jinja2. Every number shown is read from results/;
the paper's numbers come from workflow/resources/paper_values.yaml.
"""

from __future__ import annotations

import base64
import glob
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path

import jinja2
import pandas as pd
import yaml

from . import provenance, report_summary, sample_size_report
from .config import load_paper_values
from .runtime import atomic_path
from .theory import FORMULAS
from .verdicts import ORDER_TOLERANCE, cell, fmt, fmt_sd, mean_sd, verdict

PACKAGES = ("snakemake", "numpy", "scipy", "pandas", "torch", "matplotlib", "jinja2")


def _num(row, col):
    value = row.get(col)
    return None if value is None or pd.isna(value) else float(value)


def table1_rows(table: pd.DataFrame, objectives: list[str], default_objective: str) -> list[dict]:
    other = [o for o in objectives if o != default_objective]
    rows = []
    for _, r in table.iterrows():
        row = {
            "D": int(r["D"]),
            "tail": cell(_num(r, "spectral_tail"), _num(r, "paper_spectral_tail")),
            "trunc": cell(
                _num(r, "truncation_excess_risk"), _num(r, "paper_truncation_excess_risk")
            ),
            "floor": fmt(_num(r, "rank_d_floor_excess_risk")),
            "mlp": {},
        }
        for objective in [default_objective, *other]:
            sfx = "" if objective == default_objective else f"_{objective}"
            row["mlp"][objective] = {
                "l2": cell(
                    _num(r, f"mlp_l2_distance_mean{sfx}"),
                    _num(r, "paper_mlp_l2_distance"),
                    _num(r, f"mlp_l2_distance_sd{sfx}"),
                ),
                "excess": cell(
                    _num(r, f"mlp_excess_risk_mean{sfx}"),
                    _num(r, "paper_mlp_excess_risk"),
                    _num(r, f"mlp_excess_risk_sd{sfx}"),
                ),
                "over_floor": f"{_num(r, f'mlp_excess_over_floor{sfx}'):.3g}",
                "n": int(_num(r, f"n_seeds{sfx}") or 0),
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


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
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


def benchmark_table(root: str = "benchmarks") -> list[dict]:
    """Per rule: jobs, total and max wall time, max memory, from Snakemake's benchmark files."""
    rows = []
    for path in sorted(glob.glob(os.path.join(root, "**", "*.tsv"), recursive=True)):
        rule = Path(path).relative_to(root).parts[0]
        bench = pd.read_csv(path, sep="\t")
        rows.append({"rule": rule, "s": bench["s"].iloc[-1], "max_rss": bench["max_rss"].iloc[-1]})
    if not rows:
        return []
    df = pd.DataFrame(rows)
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


def lcgm_context(table_csv, elbow_csv, design_json, paper: dict) -> dict:
    """The LCGM section: design check, probe rows per D, the paper's R² at D = K, elbows."""
    t = pd.read_csv(table_csv)
    elbows = pd.read_csv(elbow_csv)
    with open(design_json, encoding="utf-8") as fh:
        design = json.load(fh)

    def pm(r, col, f="{:.4f}"):
        return mean_sd(_num(r, f"{col}_mean"), _num(r, f"{col}_sd"), f.format)

    rows = []
    for _, r in t.iterrows():
        row = {
            "D": int(r["D"]),
            "is_K": bool(r["is_K"]),
            "r2_f": pm(r, "probe_r2_f"),
            "r2_g": pm(r, "probe_r2_g"),
            "cc_g": pm(r, "cc_capture_g"),
            "cc_f": pm(r, "cc_capture_f"),
            "excess": pm(r, "heldout_excess", "{:.2e}"),
            "n": int(r["n_seeds"]),
        }
        rows.append(row)
    at_k = t[t["is_K"]]
    comparison = []
    if len(at_k) and paper["K"] == int(design["K"]):
        r = at_k.iloc[0]
        for key, label in (("probe_r2_f", "f(x) → p(z|x)"), ("probe_r2_g", "g(y) → log p(z|y)/π")):
            ours, sd, theirs = _num(r, f"{key}_mean"), _num(r, f"{key}_sd"), _num(r, f"paper_{key}")
            text, css = verdict(ours, theirs, digits=2)
            comparison.append(
                {
                    "key": key,
                    "probe": label,
                    "ours": mean_sd(ours, sd, "{:.4f}".format),
                    "paper": "—" if theirs is None else f"{theirs:g}",
                    "diff": "—" if theirs is None else f"{ours - theirs:+.4f}",
                    "verdict": text,
                    "css": css,
                }
            )
    return {
        "rows": rows,
        "comparison": comparison,
        "elbows": elbows.to_dict("records"),
        "elbow": int(elbows.set_index("curve").loc["alignment_quality", "elbow_D"]),
        "excess_elbow": int(elbows.set_index("curve").loc["heldout_excess", "elbow_D"]),
        "K": int(design["K"]),
        "paper_K": paper["K"],
        "design": design,
        "fraction": float(elbows["fraction"].iloc[0]),
    }


def noise_context(table_csv, paper: dict) -> dict:
    """The noise-exponent section: per-seed and pooled fits per dataset."""
    t = pd.read_csv(table_csv)
    rows = []
    for _, r in t.iterrows():
        is_pooled = int(r["seed"]) == -1
        row = {
            "dataset": r["dataset"],
            "seed": int(r["seed"]),
            "sample": r["sample"],
            "pooled": is_pooled,
            "n": f"{int(r['n_samples']):,}",
            "mu": f"{r['mu_hat']:.4f}",
            "ci": f"[{r['mu_ci_lo']:.4f}, {r['mu_ci_hi']:.4f}]",
            "rate": f"{r['rate_exponent']:.4f}",
            "rate_ci": f"[{r['rate_exponent_ci_lo']:.4f}, {r['rate_exponent_ci_hi']:.4f}]",
            "sd": "—" if pd.isna(r.get("mu_hat_seed_sd")) else f"{r['mu_hat_seed_sd']:.4f}",
        }
        if is_pooled and r["dataset"] == "gmm":
            label, css = verdict(r["mu_hat"], paper["mu_hat"], digits=4)
            inside = r["mu_ci_lo"] <= paper["mu_hat"] <= r["mu_ci_hi"]
            row["paper"] = {
                "mu": f"{paper['mu_hat']:.6f}",
                "rate": f"{paper['rate_exponent']:.4f}",
                "diff": f"{r['mu_hat'] - paper['mu_hat']:+.4f}",
                "verdict": label,
                "css": css,
                "inside": bool(inside),
            }
        rows.append(row)
    gmm = t[(t["dataset"] == "gmm") & (t["seed"] == -1)]
    asym = None
    if len(gmm) and "asymptotic_c" in gmm:
        g = gmm.iloc[0]
        asym = {
            "c": f"{g['asymptotic_c']:.4f}",
            "C0": f"{g['asymptotic_C0']:.4f}",
            "alpha": f"{g['asymptotic_alpha']:.4f}",
            "beta": f"{g['asymptotic_beta']:.4f}",
            "window_slope": f"{g['asymptotic_window_slope']:.4f}",
            "max_dev": f"{100 * g['asymptotic_max_rel_dev_in_window']:.1f}",
            "warnings": int(g["asymptotic_quadrature_warnings"]),
        }
    first = t.iloc[0]
    return {
        "rows": rows,
        "paper_row": next((r for r in rows if "paper" in r), None),
        "asym": asym,
        "window": f"[{first['window_lo']:g}, {first['window_hi']:g}]",
        "scheme": first["scheme"],
    }


def calibration_context(table_csv) -> dict:
    t = pd.read_csv(table_csv)
    rows = []
    for _, r in t.iterrows():
        rows.append(
            {
                "group": r["group"],
                "n": int(r["n_points"]),
                "excluded": int(r["n_excluded"]),
                "exponent": f"{r['exponent']:.3f}",
                "ci": f"[{r['exponent_ci_lo']:.3f}, {r['exponent_ci_hi']:.3f}]",
                "noise_rate": "—" if pd.isna(r["noise_rate"]) else f"{r['noise_rate']:.3f}",
                "c_half": f"{r['max_ratio_to_bound']:.3g}",
                "c_noise": "—"
                if pd.isna(r.get("max_ratio_to_noise_bound"))
                else f"{r['max_ratio_to_noise_bound']:.3g}",
                "above_half": bool(r["exponent_ci_lo"] > 0.5),
            }
        )
    return {"rows": rows}


def cosine_context(table_csv) -> dict:
    t = pd.read_csv(table_csv)
    rows = []
    for _, r in t.iterrows():

        def pm(col, r=r):
            return mean_sd(_num(r, col), _num(r, col.replace("_mean_", "_sd_")), fmt, fmt_sd)

        rows.append(
            {
                "D": int(r["D"]),
                "excess_inner": pm("mlp_excess_risk_mean_inner"),
                "excess_cosine": pm("mlp_excess_risk_mean_cosine"),
                "l2_inner": pm("mlp_l2_distance_mean_inner"),
                "l2_cosine": pm("mlp_l2_distance_mean_cosine"),
                "ratio": f"{r['mlp_excess_risk_cosine_over_inner']:.3g}",
                "floor": fmt(_num(r, "rank_d_floor_excess_risk")),
                "scale": "—"
                if pd.isna(r.get("cosine_scale_mean"))
                else f"{r['cosine_scale_mean']:.3f}",
            }
        )
    return {"rows": rows}


def table2(table: pd.DataFrame) -> dict:
    models = {}
    for model, sub in table.groupby("model", sort=False):
        models[model] = {
            "formulas": FORMULAS[model],
            "rows": [
                {
                    "eps": f"{r['eps']:g}",
                    "D": f"{r['D']:.3g}",
                    "anchor": f"{r['anchor_size']:.3g}",
                    "target": f"{r['target_size']:.3g}",
                    "pd": f"{r['pseudo_dimension']:.3g}",
                }
                for _, r in sub.iterrows()
            ],
        }
    first = table.iloc[0]
    return {
        "models": models,
        "d1": int(first["d1"]),
        "d2": int(first["d2"]),
        "beta": first["beta"],
        "K": int(first["K"]),
    }


def build(inputs, params, output, repo: Path) -> str:
    """The ``build_report`` rule: render the template into one HTML file."""
    config = params.config
    paper = load_paper_values(inputs.paper)
    t1 = pd.read_csv(inputs.table1)
    spectrum = pd.read_csv(inputs.spectrum)
    checks = pd.read_csv(inputs.crosschecks)
    objectives = config["train"]["objectives"]
    default_objective = config["train"]["default_objective"]
    table1 = table1_rows(t1, objectives, default_objective)
    lcgm = lcgm_context(inputs.lcgm_table, inputs.lcgm_elbow, inputs.lcgm_design, paper["lcgm"])
    src = provenance.Sources(config)
    context = {
        "config": config,
        "config_yaml": yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
        "paper": paper,
        "table1": table1,
        "summary": report_summary.summary(
            table1, default_objective, spectrum, lcgm, pd.read_csv(inputs.noise_table), paper, src
        ),
        "src": src,
        "paper_src": src.paper,
        "derived": src.derived,
        "formula_src": "source: workflow/scripts/crl_approx/theory.py (FORMULAS); rule: "
        "compute_theory_sizes; config: theory",
        "figure_sources": provenance.figure_sources(
            {name: getattr(inputs, name) for name in params.figures}
        ),
        "objectives": [config["train"]["default_objective"]]
        + [o for o in config["train"]["objectives"] if o != config["train"]["default_objective"]],
        "mi": spectrum["mutual_information"].iloc[0],
        "nodes": int(spectrum["quadrature_nodes"].iloc[0]),
        "max_conv": spectrum["convergence_rel_change"].max(),
        "crosschecks": checks.to_dict("records"),
        "table2": table2(pd.read_csv(inputs.table2)),
        "noise": noise_context(inputs.noise_table, paper["noise"]),
        "calibration": calibration_context(inputs.calibration_table),
        "cosine": cosine_context(inputs.cosine_table)
        if set(config["ablation"]["scores"]) >= {"inner", "cosine"}
        else None,
        "sample_size": sample_size_report.context(
            inputs.sample_size_table, inputs.sample_size_fits, config["train"]["default_objective"]
        ),
        "lcgm": lcgm,
        "figures": {name: img(getattr(inputs, name)) for name in params.figures},
        "order_tolerance": 10**ORDER_TOLERANCE,
        "git": git_state(repo),
        "machine": machine(),
        "packages": package_versions(),
        "benchmarks": benchmark_table(),
        "fmt": fmt,
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(inputs.template).parent),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    context["css"] = jinja2.utils.markupsafe.Markup(Path(inputs.css).read_text(encoding="utf-8"))
    text = env.get_template(Path(inputs.template).name).render(**context)
    with atomic_path(output.html) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return text
