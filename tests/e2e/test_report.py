"""The HTML report: contents, self-containment, Snakemake's own report, what reruns after edits."""

import os
import re
import zipfile
from contextlib import contextmanager

import pandas as pd
import pytest
import yaml

from conftest import REPO, job_counts, run_snakemake

pytestmark = pytest.mark.e2e
SMOKE = str(REPO / "config" / "smoke.yaml")
IDS = [
    "table1-main",
    "table1-mlp-population",
    "table1-mlp-samples",
    "crosschecks",
    "table2-formulas",
    "table2-general",
    "table2-lcgm",
    "provenance-table",
    "benchmarks",
    "config",
    "fig-eigenvalues",
    "fig-excess",
    "fig-training",
    "fig-theory",
    "lcgm-probes",
    "lcgm-elbow",
    "fig-lcgm-probes",
    "fig-lcgm-cancorr",
    "fig-lcgm-features",
    "noise-table",
    "fig-noise",
    "calibration-table",
    "fig-calibration",
    "dynamics-table",
    "fig-dynamics-alignment",
    "fig-dynamics-directions",
    "fig-dynamics-order",
    "cosine-table",
    "fig-cosine",
    "summary-table",
    "sample-size-table",
    "sample-size-fits",
    "sample-size-lr",
    "fig-sample-size",
    "digits-operator",
    "digits-table1",
    "digits-sweep",
    "digits-elbow",
    "digits-cancorr",
    "fig-digits",
]


def test_report_holds_every_table_and_figure_and_is_self_contained(smoke_run, smoke_plan):
    html = (smoke_run / "results" / "report" / "index.html").read_text()
    for ident in IDS:
        assert f'id="{ident}"' in html, ident
    # figures are inline, nothing is fetched, nothing runs
    plots = sum(plot_jobs(smoke_plan).values())
    assert plots >= 18  # the figures of every experiment (tests/unit/test_smoke_plan.py)
    assert html.count('src="data:image/svg+xml;base64,') == plots
    # no link leaves the report: the sections' pointers to their docs pages land on the pages'
    # text in the report's appendix, so they work wherever the report is read
    external = re.findall(r'(?:src|href)="(?!data:|#)([^"]*)"', html)
    assert external == []
    docs_links = re.findall(r'href="#(docs-[\w-]+)"', html)
    assert len(set(docs_links)) >= 8
    for target in docs_links:
        assert f'id="{target}"' in html, target
    assert "# Experiment R" in html.split('id="docs-experiment-r"', 1)[1][:2000]
    assert not re.findall(r'src="(?!data:)', html)
    assert "<script" not in html.lower()
    assert "@import" not in html and "url(" not in html
    # the paper's numbers stand beside ours (read from paper_values.yaml, never typed in the
    # template), and each verdict is the one the table's numbers give at the paper's 4 digits
    paper = yaml.safe_load((REPO / "workflow" / "resources" / "paper_values.yaml").read_text())
    t1 = pd.read_csv(smoke_run / "results" / "tables" / "table1.csv")
    t1 = t1[t1["is_default"]]  # the spectral columns repeat on every objective's rows
    main = html.split('id="table1-main"', 1)[1].split("</table>", 1)[0]
    matches = 0
    for _, r in t1.iterrows():
        for col in ("spectral_tail", "truncation_excess_risk"):
            ours, theirs = f"{r[col]:.3e}", f"{r[f'paper_{col}']:.3e}"
            assert ours in main and theirs in main, (col, r["D"])
            matches += ours == theirs
    assert main.count("matches printed digits") == matches
    assert f"{paper['noise']['mu_hat']:.6f}" in html
    noise = pd.read_csv(smoke_run / "results" / "tables" / "noise_exponent.csv")
    pooled = noise[(noise["dataset"] == "gmm") & (noise["seed"] == -1)].iloc[0]
    words = " ".join(html.split())
    assert f"on this one the pooled mixture estimate is {pooled['mu_hat']:.4f}" in words
    assert "git commit" in html and "torch" in html
    # the experiments 3 and 4 sections state their protocol
    assert "Detected elbow: D =" in html
    assert "μ̂ depends on the window" in html
    assert "c = αβ =" in html


#: a harmless edit per file type (Snakemake compares checksums of small inputs, so a mere touch
#: does not count as a change)
EDITS = {
    ".j2": "\n{# edited by a test #}\n",
    ".css": "\n/* edited by a test */\n",
    ".py": "\n# edited\n",
}


@contextmanager
def edited(*paths):
    """Edit files (as a user would), then restore their bytes and their mtimes exactly."""
    saved = {p: (p.read_bytes(), os.stat(p)) for p in paths}
    try:
        for p in paths:
            p.write_bytes(saved[p][0] + EDITS[p.suffix].encode())
        yield
    finally:
        for p, (data, st) in saved.items():
            p.write_bytes(data)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def dry_run(workdir, *extra):
    proc = run_snakemake(workdir, "-n", "--configfile", SMOKE, *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def plot_jobs(plan: dict) -> dict:
    """The plot rules of a plan and their jobs."""
    return {rule: n for rule, n in plan.items() if rule.startswith("plot_")}


def test_editing_the_template_or_report_code_reruns_only_the_report(smoke_run, smoke_plan):
    for path in (REPO / "report" / "templates" / "index.html.j2", REPO / "report" / "style.css"):
        with edited(path):
            assert job_counts(dry_run(smoke_run)) == {"build_report": 1, "all": 1}, path
    with edited(REPO / "workflow" / "scripts" / "crl_approx" / "render" / "html.py"):
        assert job_counts(dry_run(smoke_run)) == {"build_report": 1, "all": 1}
    with edited(REPO / "workflow" / "scripts" / "crl_approx" / "figures" / "draw.py"):
        jobs = job_counts(dry_run(smoke_run))
    assert jobs == {**plot_jobs(smoke_plan), "build_report": 1, "all": 1}
    assert "Nothing to be done" in (lambda p: p.stdout + p.stderr)(dry_run(smoke_run))


def test_editing_tau_reruns_what_depends_on_it_and_nothing_else(smoke_run):
    jobs = job_counts(dry_run(smoke_run, "--config", "tau=0.25"))
    assert jobs == {
        "compute_spectrum": 1,
        "compute_rank_floor": 1,
        "train_encoder": 8,  # 4 Table 1 runs, 2 cosine-ablation runs, 2 LCGM runs
        "train_encoder_budget": 2,  # the dynamics budget check: 2 objectives at D = 2
        "assemble_table1": 1,
        "probe_lcgm": 2,
        "assemble_lcgm": 1,
        "measure_calibration": 1,
        "assemble_cosine": 1,
        "train_sample_size": 7,
        "assemble_sample_size": 1,
        "plot_sample_size": 1,
        "plot_eigenvalues": 1,
        "plot_excess": 1,
        "plot_training_curves": 1,
        "plot_lcgm_probes": 1,
        "plot_lcgm_cancorr": 1,
        "plot_lcgm_features": 1,
        "plot_calibration": 1,
        "plot_cosine": 1,
        "measure_dynamics": 1,
        "measure_dynamics_lcgm": 1,
        "plot_dynamics_lcgm": 1,
        "plot_dynamics_alignment": 1,
        "plot_dynamics_directions": 1,
        "plot_dynamics_order": 1,
        "compute_digits_operator": 1,  # Experiment R's exact L* = −τ·I and floor depend on τ
        "train_digits": 6,
        "assemble_digits": 1,
        "plot_digits": 1,
        # Experiment W's cells train with τ: per LCGM world (the LCGM, d = 12) the sweeps of f and
        # g (width 8 in the smoke grid) and the widest cell, the LCGM's widest at 2x, the
        # mixture's sweeps of f and g (its widest is above)
        "train_widths": 4,
        "train_widths_widest": 3,
        "train_widths_gmm": 2,
        "assemble_widths": 1,
        "plot_widths": 1,
        # Experiment S: the truncation excess, the floors and the training all use τ (smoke: two
        # worlds, both trained at D = 1, 2, every seed of a cell in one job)
        "compute_smoothness": 2,
        "compute_smoothness_floor": 2,
        "train_smoothness": 4,
        "assemble_smoothness": 1,
        "plot_smoothness": 1,
        "assemble_claims": 1,
        "build_report": 1,
        "all": 1,
    }
    # the sampled datasets, the LCGM design, the noise Monte Carlo and the theory table do not
    # depend on tau
    for rule in ("make_dataset", "check_lcgm_design", "estimate_noise_exponent", "assemble_noise"):
        assert rule not in jobs, rule
    assert "compute_theory_sizes" not in jobs


def test_snakemake_report_refuses_another_configuration_than_the_runs(smoke_run, tmp_path):
    """Without the smoke run's --configfile, --report would describe the paper's setting over the
    smoke tables: it stops, names differing keys and says what to pass; nothing is written."""
    target = tmp_path / "wrong.zip"
    proc = run_snakemake(smoke_run, "--report", str(target))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "made with another configuration" in out and "seeds" in out, out[-2000:]
    assert "--configfile config/smoke.yaml" in out
    assert not target.exists()


def test_the_paper_targets_own_native_report(smoke_run, tmp_path):
    """`snakemake paper --report` bundles the paper's tables and figures only, and its description
    renders without a docutils error although the HTML report is not among them."""
    target = tmp_path / "paper.zip"
    proc = run_snakemake(smoke_run, "paper", "--configfile", SMOKE, "--report", str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    archive = zipfile.ZipFile(target)
    names = {n.rsplit("/", 1)[-1] for n in archive.namelist()}
    assert {"table1.csv", "table2.csv", "lcgm_probes.csv", "noise_exponent.csv"} <= names
    assert not names & {"widths.csv", "sample_size.csv", "index.html"}
    text = "".join(
        archive.read(n).decode("utf-8", "replace")
        for n in archive.namelist()
        if n.endswith((".html", ".js"))
    )
    assert "System Message" not in text and "of the target it was made for only" in text


def test_snakemake_report_bundles_the_figures_and_tables(smoke_run, tmp_path):
    target = smoke_run / "results" / "provenance.zip"
    proc = run_snakemake(smoke_run, "--configfile", SMOKE, "--report", str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = zipfile.ZipFile(target).namelist()
    for fig in (
        "eigenvalues.svg",
        "excess_vs_d.svg",
        "training_curves.svg",
        "theory_sizes.svg",
        "lcgm_probes.svg",
        "lcgm_cancorr.svg",
        "lcgm_features.svg",
        "noise_exponent.svg",
        "calibration.svg",
        "cosine_ablation.svg",
        "sample_size.svg",
        # the tables too
        "table1.csv",
        "table2.csv",
        "lcgm_probes.csv",
        "noise_exponent.csv",
        "calibration.csv",
        "cosine_ablation.csv",
        "sample_size.csv",
        "sample_size_fits.csv",
    ):
        assert any(n.endswith(fig) for n in names), fig
    assert any(n.endswith("index.html") for n in names)

    # every table and figure the project's report reads is in Snakemake's report too
    dry = run_snakemake(
        smoke_run,
        "--configfile",
        SMOKE,
        "-n",
        "--forcerun",
        "build_report",
        "--",
        "results/report/index.html",
    )
    assert dry.returncode == 0, dry.stderr[-3000:]
    inputs = re.search(r"rule build_report:\n\s+input: ([^\n]+)", dry.stdout).group(1)
    read = [f for f in inputs.split(", ") if f.startswith("results/")]
    assert len(read) > 30, read
    for path in read:  # the zip keeps each file's name, in a folder per file
        assert any(n.endswith("/" + path.rsplit("/", 1)[-1]) for n in names), path

    # captions and the description page render without a docutils error, one category per
    # section of the HTML report (common.smk's REPORT), the description page links index.html
    text = "".join(
        zipfile.ZipFile(target).read(n).decode("utf-8", "replace")
        for n in names
        if n.endswith((".html", ".js"))
    )
    assert "System Message" not in text
    # subcategories by kind, never Snakemake's "Other"
    for kind in ("Tables", "Figures"):
        assert f'"{kind}"' in text, kind
    from crl_approx.config.sections import SECTIONS, native_category

    categories = [native_category(key) for key in SECTIONS]
    assert len(set(categories)) == 12
    for category in categories:
        assert category in text, category
    assert "The main artifact is the project" in text


@pytest.mark.parametrize("override", [{"window": [1.0e-4, 1.0e-2]}, {"ci_level": 0.9}])
def test_changing_the_noise_fit_reruns_the_assembly_and_no_monte_carlo(
    smoke_run, tmp_path, override
):
    """The fit settings are the assembly's params only: the 10^7-draw Monte Carlo stays."""
    extra = tmp_path / "noise.yaml"
    extra.write_text(yaml.safe_dump({"noise": override}))
    jobs = job_counts(dry_run(smoke_run, str(extra)))
    assert jobs == {
        "assemble_noise": 1,
        "measure_calibration": 1,  # reads the noise table (the rate exponent beside its κ̂)
        "plot_noise_exponent": 1,
        "plot_calibration": 1,
        "assemble_claims": 1,  # reads the noise table (the μ̂ claim)
        "build_report": 1,
        "all": 1,
    }


def test_changing_the_monte_carlo_reruns_its_draws(smoke_run, smoke_plan, tmp_path):
    """The contrapositive: a sampling key (draws per seed) does rerun every Monte Carlo."""
    extra = tmp_path / "noise.yaml"
    extra.write_text(yaml.safe_dump({"noise": {"n_samples": 60000}}))
    jobs = job_counts(dry_run(smoke_run, str(extra)))
    assert jobs["estimate_noise_exponent"] == smoke_plan["estimate_noise_exponent"]
    assert jobs["assemble_noise"] == 1


def test_no_raw_nan_where_a_person_reads(smoke_run):
    """The smoke run has one seed per cell and small grids, so intervals, effective ranks above K
    and ε reached are missing there: the report must say so in words (or "—"), never print a raw
    `nan` (as `[nan, nan] (95% t)` and `nan% [nan%, nan%]` once did). Scanned: the report's text
    and its attributes (tooltips), scripts and styles left out."""
    page = (smoke_run / "results" / "report" / "index.html").read_text()
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S | re.I)
    # Python prints a missing float as lower-case nan; prose may say "NaN" on purpose
    hits = [m.group(0) for m in re.finditer(r".{0,60}\bnan\b.{0,30}", page)]
    assert not hits, hits[:5]
