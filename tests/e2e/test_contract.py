"""The experiment contract (issue 34): an experiment defined only inside tests/ (tests/toy: one
rules file, one package module, one template partial, a caption) is plugged into a finished smoke
run with the config key extra_experiments, and appears in rule all, the claims table, the report
(its own section, its claims row in the summary, provenance titles that lead back to its file)
and README's glance block; no file of the workflow is edited."""

import shutil

import pandas as pd
import pytest
import yaml

from conftest import REPO, job_counts, run_snakemake

pytestmark = pytest.mark.e2e
TOY = REPO / "tests" / "toy"


def toy_config(tmp_path, n=400):
    path = tmp_path / "toy.yaml"
    entry = {"rules": str(TOY / "toy.smk"), "params": {"n": n}}
    path.write_text(yaml.safe_dump({"extra_experiments": {"toy": entry}}))
    return path


def configfiles(tmp_path, n=400):
    return ("--configfile", str(REPO / "config" / "smoke.yaml"), str(toy_config(tmp_path, n)))


@pytest.fixture(scope="module")
def toy_run(smoke_run, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("toy")
    work = tmp / "work"
    shutil.copytree(smoke_run, work, symlinks=True)  # mtimes kept: nothing of smoke's reruns
    plan = run_snakemake(work, "--dry-run", "--quiet", "rules", *configfiles(tmp))
    assert plan.returncode == 0, plan.stderr[-3000:]
    proc = run_snakemake(work, "--cores", "2", *configfiles(tmp))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return work, tmp, job_counts(plan)


def test_the_toy_runs_with_no_edit_to_the_workflow(toy_run):
    _, _, plan = toy_run
    # rule all builds it, and only the toy and what reads every experiment run
    assert plan == {"assemble_toy": 1, "assemble_claims": 1, "build_report": 1, "all": 1}
    # the whole experiment: what tests/toy holds
    files = sorted(p.name for p in TOY.iterdir() if p.is_file())
    assert files == ["toy.html.j2", "toy.rst", "toy.smk", "toy.yaml", "toy_experiment.py"]


def test_its_claims_are_a_row_of_the_claims_table_with_its_keys(toy_run):
    work, _, _ = toy_run
    claims = pd.read_csv(work / "results" / "tables" / "claims.csv", keep_default_na=False)
    toy = claims[claims["id"] == "toy-mean"]
    assert len(toy) == 1
    row = toy.iloc[0]
    table = pd.read_csv(work / "results" / "tables" / "toy.csv")
    bound = 4 / 400**0.5
    # the verdict follows the table (an answer known apart from the toy's code: 4/√400 = 0.2)
    assert row["verdict"] == ("holds" if table["mean"].abs().max() <= bound else "fails")
    assert row["section"] == "toy" and row["kind"] == "our pre-registered prediction"
    assert row["keys"] == "extra_experiments.toy.params.n, seeds"
    assert set(claims["id"]) > {"toy-mean", "T1 exact"}  # the project's claims are all kept


def test_the_report_prints_its_section_and_its_summary_row(toy_run):
    from test_report_provenance import check_provenance, fields, numeric_cells

    work, _, _ = toy_run
    html = (work / "results" / "report" / "index.html").read_text()
    assert '<section id="toy">' in html and '<a href="#toy">' in html
    assert "Toy experiment: a sample mean</h2>" in html
    summary = html.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    assert '<a href="#toy">Toy: the sample mean is within 4/√n of 0</a>' in summary
    titles = [t for t, _ in numeric_cells(html) if t and "toy.csv" in t]
    assert titles and all(fields(t)["rule"] == "assemble_toy" for t in titles)
    assert "extra_experiments.toy.params.n=400" in titles[0]
    check_provenance(work)  # every number, the toy's included, leads back to its file


def test_readme_glance_block_has_its_row(toy_run):
    from crl_approx.config import load_paper_values
    from crl_approx.render import readme

    work, _, _ = toy_run
    config = yaml.safe_load((work / "results" / "report" / "config.yaml").read_text())
    paper = load_paper_values(REPO / "workflow" / "resources" / "paper_values.yaml")
    block = readme.render(work / "results", config, paper, names=["at_a_glance"])["at_a_glance"]
    rows = [line for line in block.splitlines() if line.startswith("| Toy: the sample mean")]
    assert len(rows) == 1 and "| holds |" in rows[0]


def test_its_config_key_reruns_it_and_a_missing_rules_file_is_refused(toy_run):
    work, tmp, _ = toy_run
    plan = run_snakemake(work, "--dry-run", "--quiet", "rules", *configfiles(tmp, n=900))
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert job_counts(plan) == {
        "assemble_toy": 1,
        "assemble_claims": 1,
        "build_report": 1,
        "all": 1,
    }
    bad = tmp / "bad.yaml"
    bad.write_text(yaml.safe_dump({"extra_experiments": {"toy": {"rules": str(tmp / "no.smk")}}}))
    proc = run_snakemake(
        work, "--dry-run", "--configfile", str(REPO / "config" / "smoke.yaml"), str(bad)
    )
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "config key 'extra_experiments.toy.rules': no such rules file" in said
