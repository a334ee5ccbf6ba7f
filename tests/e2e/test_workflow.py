"""End-to-end: the real snakemake, on the repo's Snakefile, in a temporary working directory."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bad_configs import BAD_CONFIGS
from conftest import REPO, run_snakemake
from crl_approx.analyses.noise import seed_fit
from crl_approx.models.gmm import GaussianMixture
from crl_approx.numerics.spectrum import operator_spectrum, spectrum_table

pytestmark = pytest.mark.e2e
SMOKE = str(REPO / "config" / "smoke.yaml")
SPECTRUM_OUTPUTS = ["eigenvalues.csv", "spectrum.csv", "convergence.csv", "crosschecks.csv"]


def check(proc):
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def test_smoke_run_writes_the_spectrum_tables(smoke_run):
    gmm = smoke_run / "results" / "gmm"
    for name in SPECTRUM_OUTPUTS:
        assert (gmm / name).stat().st_size > 0, name
    spectrum = pd.read_csv(gmm / "spectrum.csv")
    assert spectrum["D"].tolist() == [1, 2]
    assert set(spectrum["quadrature_nodes"]) == {40}
    eig = pd.read_csv(gmm / "eigenvalues.csv")
    assert eig["index"].tolist() == list(range(1, 9))
    # the workflow's numbers are the package's numbers for the same config
    paper_mix = GaussianMixture(1.2, 1.0, 1.2, 1.0)
    expected = spectrum_table(operator_spectrum(paper_mix, 40), [1, 2], 0.5)
    pd.testing.assert_series_equal(spectrum["spectral_tail"], expected["spectral_tail"], rtol=1e-14)
    conv = pd.read_csv(gmm / "convergence.csv")
    assert set(conv["nodes_low"]) == {20}
    checks = pd.read_csv(gmm / "crosschecks.csv").set_index("quantity")
    assert checks["rel_diff"].max() < 1e-5  # 40 nodes: quadrature error ~1e-6


def test_every_job_leaves_a_log_and_a_benchmark(smoke_run):
    log = (smoke_run / "logs" / "compute_spectrum" / "gmm.log").read_text()
    assert "param gmm" in log and "done in" in log and "largest relative change" in log
    bench = pd.read_csv(smoke_run / "benchmarks" / "compute_spectrum" / "gmm.tsv", sep="\t")
    assert bench["s"].iloc[0] > 0


def test_every_finished_job_exits_without_the_interpreters_teardown(smoke_run):
    """Snakemake's real ``script:`` jobs take runtime.exit_now (its detection reads Snakemake's
    object and preamble, which a Snakemake release could change): every log with the CPU line ends
    with the exit line, and Snakemake saw every job succeed (the run finished)."""
    from crl_approx.runtime import CPU_PATTERN, EXIT_LINE

    logs = [p for p in (smoke_run / "logs").rglob("*.log") if CPU_PATTERN.search(p.read_text())]
    assert len(logs) > 50
    missing = [str(p) for p in logs if not p.read_text().rstrip().endswith(EXIT_LINE)]
    assert not missing, missing[:5]


def test_every_job_stays_within_the_memory_its_rule_asks_a_cluster_for(smoke_run):
    """Every job's log gives its peak resident memory and its rule's mem_mb (every rule declares
    one: a cluster reserves it, and kills a job above it); on the smoke run each peak is below."""
    from crl_approx.render.runrecord import job_memory
    from crl_approx.runtime import CPU_PATTERN

    logs = [p for p in (smoke_run / "logs").rglob("*.log") if CPU_PATTERN.search(p.read_text())]
    assert len(logs) > 50
    memory = {str(p.relative_to(smoke_run)): job_memory(p) for p in logs}
    assert all(m is not None and m[1] is not None for m in memory.values()), memory
    above = {job: m for job, m in memory.items() if m[0] > m[1]}
    assert not above, above
    assert max(m[0] for m in memory.values()) > 100  # a real peak, not a placeholder


def test_rerun_is_a_no_op_and_tau_change_reruns_the_spectrum(smoke_run):
    proc = check(run_snakemake(smoke_run, "-n", "--configfile", SMOKE))
    assert "Nothing to be done" in proc.stdout + proc.stderr
    proc = check(run_snakemake(smoke_run, "-n", "--configfile", SMOKE, "--config", "tau=0.25"))
    assert "compute_spectrum" in proc.stdout


def test_default_config_reproduces_the_paper_digits(tmp_path):
    # the spectrum rule only (the whole default run, 60 models in 20 training jobs, takes minutes)
    check(run_snakemake(tmp_path, "--cores", "2", "compute_spectrum"))
    table = pd.read_csv(tmp_path / "results" / "gmm" / "spectrum.csv").set_index("D")
    paper = {
        1: ("4.902e-01", "3.808e-02"),
        2: ("1.397e-02", "9.984e-04"),
        4: ("6.822e-04", "5.638e-05"),
        8: ("6.165e-06", "5.587e-07"),
    }
    for d, (tail, trunc) in paper.items():
        assert f"{table.loc[d, 'spectral_tail']:.3e}" == tail
        assert f"{table.loc[d, 'truncation_excess_risk']:.3e}" == trunc
    assert table["convergence_rel_change"].max() < 1e-4
    assert len(pd.read_csv(tmp_path / "results" / "gmm" / "eigenvalues.csv")) >= 32


def test_default_noise_monte_carlo_reproduces_the_paper_exponent(tmp_path, default_config):
    """One seed of the default Monte Carlo (10^7 draws, window [1e-5, 1e-3]): the paper's
    μ̂ = 0.878890 lies inside our 95 % interval."""
    check(run_snakemake(tmp_path, "--cores", "2", "results/noise/gmm/seed~0/counts.json"))
    record = json.loads(
        (tmp_path / "results" / "noise" / "gmm" / "seed~0" / "counts.json").read_text()
    )
    fit = seed_fit(record, default_config["noise"])  # the assembly's per-seed fit
    assert fit["n_samples"] == 10_000_000
    assert (fit["window_lo"], fit["window_hi"]) == (1e-5, 1e-3)
    assert fit["mu_ci_lo"] <= 0.878890 <= fit["mu_ci_hi"]
    assert fit["mu_ci_hi"] - fit["mu_ci_lo"] < 0.03


#: one entry of each class of the corpus through the real snakemake (each costs a Snakemake
#: start-up); the fast tier runs every entry through the validator Snakemake calls
#: (tests/unit/test_config.py), and tests/unit/test_config_snakemake.py the --config paths
E2E_SAMPLE = {
    "tau_negative",
    "misspelt_gmm_key",
    "dims_beyond_computed_eigenvalues",
    "lcgm_prior_wrong_length",
    "tau_nan",
    "theory_eps_nan",
    "lr_nan",
    "n_train_1e12",
    "seed_2_64",
    "other_lrs_share_a_path_label",
    "digits_grouping_missing_a_digit",
    "lcgm_n_checkpoint_above_n_val",
    "study_without_protocol",
    "towers_beyond_memory",
    "widths_dim_sweep_below_K",
}
SAMPLE = [b for b in BAD_CONFIGS if b[0] in E2E_SAMPLE]


def test_the_e2e_sample_names_entries_of_the_corpus():
    assert len(SAMPLE) == len(E2E_SAMPLE)


@pytest.mark.parametrize(("name", "override", "key"), SAMPLE, ids=[b[0] for b in SAMPLE])
def test_bad_config_fails_fast_naming_the_key_and_writes_nothing(tmp_path, name, override, key):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(override))
    work = tmp_path / "work"
    work.mkdir()
    proc = run_snakemake(work, "--cores", "1", "--configfile", str(bad), timeout=120)
    assert proc.returncode != 0
    assert f"config key '{key}'" in proc.stdout + proc.stderr
    assert not (work / "results").exists()
    assert not (work / "logs").exists()


def test_config_override_on_the_command_line_is_validated(tmp_path):
    proc = run_snakemake(tmp_path, "--cores", "1", "--config", "tau=-0.5", timeout=120)
    assert proc.returncode != 0
    assert "config key 'tau'" in proc.stdout + proc.stderr
    assert not Path(tmp_path, "results").exists()
