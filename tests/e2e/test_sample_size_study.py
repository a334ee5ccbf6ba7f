"""The sample-size study in the real workflow: its job list (the samples run is reused, never
retrained), and its table, figure and report section on the smoke config."""

import re

import pandas as pd
import pytest

from conftest import REPO, run_snakemake

pytestmark = pytest.mark.e2e
SMOKE = str(REPO / "config" / "smoke.yaml")


def planned_jobs(workdir, *args) -> list[dict]:
    """Every job of a dry run: its rule and wildcards."""
    proc = run_snakemake(workdir, "-n", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = []
    for block in re.split(r"\n(?=\[.*\]\nrule |rule )", proc.stdout):
        rule = re.search(r"^(?:\[.*\]\n)?rule (\w+):", block, re.M)
        if not rule:
            continue
        wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        pairs = dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}
        jobs.append({"rule": rule.group(1), **pairs})
    return jobs


def test_the_default_study_reuses_the_samples_run_and_trains_every_other_cell_once(tmp_path):
    jobs = planned_jobs(tmp_path)
    study = [j for j in jobs if j["rule"] == "train_sample_size"]
    cells = {(j["pool"], j["budget"], j["lr"], j["dim"]) for j in study}
    assert len(cells) == len(study)  # no cell twice
    # n = 10^5 (gmm.n_train) at 1x and lr 0.001 is Table 1's samples run: no study job for it
    assert not [c for c in cells if c[:3] == ("100000", "1", "0.001")]
    samples = [j for j in jobs if j["rule"] == "train_encoder" and j["objective"] == "samples"]
    assert sorted(int(j["dim"]) for j in samples if j["dataset"] == "gmm") == [1, 2, 4, 8]
    # pools 10^4 and 10^6 and fresh at every D; fresh at 2x and 4x at D = 4, 8; lr 3e-4 and 3e-3
    # (fresh) there
    expected = {(p, "1", "0.001", d) for p in ("10000", "1000000", "fresh") for d in "1248"}
    expected |= {("fresh", m, "0.001", d) for m in "24" for d in "48"}
    expected |= {("fresh", "1", lr, d) for lr in ("0.0003", "0.003") for d in "48"}
    assert cells == expected
    # pools of 10^4 and 10^6 are drawn per seed; the pool of 10^5 is make_dataset's file
    pools = sorted((j["pool"], j["seed"]) for j in jobs if j["rule"] == "make_pool")
    assert pools == [(n, s) for n in ("10000", "1000000") for s in "012"]


def test_the_smoke_study_writes_its_table_figure_and_report_section(smoke_run):
    table = pd.read_csv(smoke_run / "results" / "tables" / "sample_size.csv")
    # D = 1, 2 × (pool 1024, pool 4096, fresh) at 1x, fresh 2x at D = 2, lr 0.003 for two
    assert len(table) == 2 * 3 + 1 + 2
    reused = table[(table["protocol"] == "n=4096") & table["is_default_lr"]]
    assert set(reused["steps"]) == {2 * 4096 // 256}  # the samples run's own steps
    # the samples run's number in the study is Table 1's
    t1 = pd.read_csv(smoke_run / "results" / "tables" / "table1.csv")
    t1 = t1[t1["objective"] == "samples"].set_index("D")
    for _, r in reused.iterrows():
        assert r["mlp_excess_risk_mean"] == t1.loc[r["D"], "mlp_excess_risk_mean"]
    fits = pd.read_csv(smoke_run / "results" / "tables" / "sample_size_fits.csv")
    assert {"sampling vs pool size", "excess vs steps (fresh)"} <= set(fits["fit"])
    svg = (smoke_run / "results" / "figures" / "sample_size.svg").read_text()
    assert "<svg" in svg and "distinct training pairs" in svg
    html = (smoke_run / "results" / "report" / "index.html").read_text()
    table1 = html.split('<section id="table1">', 1)[1].split("</section>", 1)[0]
    assert 'href="#sample-size"' in table1  # linked from Table 1
    section = html.split('<section id="sample-size">', 1)[1].split("</section>", 1)[0]
    main = table[table["is_default_lr"] & (table["budget_multiplier"] == 1)]
    reaching = [p for p, g in main.groupby("protocol") if g["reaches_paper"].all()]
    if reaching:
        assert f"{reaching[0]}" in section and "the paper's MLP excess at every D" in section
    else:
        assert "no sampled protocol reaches the paper's MLP excess at every D" in section
