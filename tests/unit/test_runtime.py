"""Atomic writes: a failure leaves neither the output nor a temporary file behind, and a result
gets the mode a plain open(…, "w") gives under the process umask."""

import os
import stat

import pandas as pd
import pytest

from crl_approx.runtime import atomic_path, write_csv


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a table")
        raise RuntimeError("killed")
    assert not target.exists()
    assert list((tmp_path / "sub").iterdir()) == []


def test_successful_write_replaces_atomically_with_full_precision(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    value = 0.1 + 0.2
    write_csv(pd.DataFrame({"v": [value]}), target)
    assert pd.read_csv(target)["v"][0] == value
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_results_get_the_mode_a_plain_open_gives_under_the_umask(tmp_path, mask):
    """mkstemp's 0600 must not leak into results: under umask 022 a table is world-readable
    (0644), under 077 private (0600), under 002 group-writable (0664) — each the mode of a file
    written by open(…, "w") beside it, and the mode of an overwritten result too."""
    old = os.umask(mask)
    try:
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
        target = tmp_path / "out.csv"
        write_csv(pd.DataFrame({"v": [1.0]}), target)
        first = stat.S_IMODE(target.stat().st_mode)
        write_csv(pd.DataFrame({"v": [2.0]}), target)  # an overwrite keeps the umask's mode
        again = stat.S_IMODE(target.stat().st_mode)
    finally:
        os.umask(old)
    assert first == again == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~mask


def fake_job(root, rule: str, name: str):
    """The parts of Snakemake's ``snakemake`` object that rule_logging reads: a log under
    root/logs/RULE/NAME.log, no params, outputs or wildcards."""
    from types import SimpleNamespace

    log = str(root / "logs" / rule / f"{name}.log")
    return SimpleNamespace(log=[log], rule=rule, params={}, threads=1, wildcards={}, output=[])


def test_a_job_logs_its_own_cpu_time_and_the_run_record_sums_it(tmp_path):
    """The record is the process's CPU since it started (a job is one process): a job that burns
    0.3 s of CPU records at least the CPU before it plus 0.3 s; one that sleeps 0.3 s adds almost
    nothing. The run record reads it back per rule from the log beside each benchmark file, and
    skips a log without the line."""
    import time

    from crl_approx.render.runrecord import job_cpu, job_times
    from crl_approx.runtime import rule_logging

    def job(name, work):
        smk = fake_job(tmp_path, "r", name)
        t0 = time.perf_counter()
        with rule_logging(smk):
            work()
        wall = time.perf_counter() - t0
        bench = tmp_path / "benchmarks" / "r" / f"{name}.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text(f"s\tmax_rss\n{wall:.3f}\t1\n")
        return job_cpu(smk.log[0])

    def burn():
        t = time.process_time()
        x = 0
        while time.process_time() - t < 0.3:
            x += 1

    before = time.process_time()
    busy = job("busy", burn)
    idle = job("idle", lambda: time.sleep(0.3))
    assert busy is not None and idle is not None
    # cumulative process CPU: the busy job's record includes what ran before it, the idle one adds
    # (almost) nothing to the busy one's
    assert busy[0] >= before + 0.3 - 0.02
    assert idle[0] - busy[0] < 0.1
    rec = job_times(tmp_path / "benchmarks")["r"]
    assert rec["cpu_jobs"] == 2 and rec["jobs"] == 2
    assert rec["cpu_s"] == pytest.approx(busy[0] + idle[0], abs=0.01)
    (tmp_path / "logs" / "r" / "idle.log").write_text("no cpu line: the job failed\n")
    assert job_times(tmp_path / "benchmarks")["r"]["cpu_jobs"] == 1


def test_a_jobs_phases_count_their_own_cpu_and_the_run_record_sums_them(tmp_path):
    """Inside a job, phase() charges a block's CPU to its name: 0.2 s of work under "steps" twice
    records ≥ 0.4 s there, a sleeping "write" almost none; a new job starts from zero; the run
    record sums the phases per rule."""
    import time

    from crl_approx.render.runrecord import job_phases, job_times
    from crl_approx.runtime import phase, rule_logging

    def burn(seconds):
        t = time.process_time()
        while time.process_time() - t < seconds:
            pass

    def job(name):
        smk = fake_job(tmp_path, "t", name)
        with rule_logging(smk):
            for _ in range(2):
                with phase("steps"):
                    burn(0.2)
            with phase("write"):
                time.sleep(0.2)
        bench = tmp_path / "benchmarks" / "t" / f"{name}.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text("s\tmax_rss\n1.0\t1\n")
        return job_phases(smk.log[0])

    first, second = job("a"), job("b")
    for rec in (first, second):
        assert 0.4 - 0.02 <= rec["steps"] < 0.6
        assert rec["write"] < 0.05
    rule = job_times(tmp_path / "benchmarks")["t"]["phase_cpu_s"]
    assert rule["steps"] == pytest.approx(first["steps"] + second["steps"], abs=0.01)


def test_a_jobs_flop_counts_are_logged_and_summed_with_the_cpu_of_the_jobs_that_counted(tmp_path):
    """count_flops adds up within a job and starts from zero in the next; the log carries the
    sums; the run record sums them per rule with the steps' and validation's CPU of the counting
    jobs only, and names a job whose step loop counted nothing (a log from before the counts)."""
    from crl_approx.render.runrecord import job_flops, job_phases, job_times
    from crl_approx.runtime import count_flops, phase, rule_logging

    def job(name, counts):
        smk = fake_job(tmp_path, "u", name)
        with rule_logging(smk):
            with phase("steps"):
                sum(range(200_000))
            with phase("validation"):
                sum(range(100_000))
            for what, flop in counts:
                count_flops(what, flop)
        bench = tmp_path / "benchmarks" / "u" / f"{name}.tsv"
        bench.parent.mkdir(parents=True, exist_ok=True)
        bench.write_text("s\tmax_rss\n1.0\t1\n")
        return smk.log[0]

    a = job("a", [("steps", 10**13), ("steps", 5), ("validation", 7)])
    b = job("b", [("steps", 3)])
    c = job("c", [])  # steps without a count
    assert job_flops(a) == {"steps": 10**13 + 5, "validation": 7}
    assert job_flops(b) == {"steps": 3} and job_flops(c) == {}
    rule = job_times(tmp_path / "benchmarks")["u"]
    assert rule["flop"] == {"steps": 10**13 + 8, "validation": 7}
    counted = sum(job_phases(x)["steps"] + job_phases(x)["validation"] for x in (a, b))
    assert rule["flop_cpu_s"] == pytest.approx(counted, abs=0.01)
    assert rule["uncounted_jobs"] == 1


def memory_job(root, name: str, mib: int, mem_mb) -> str:
    """A job in a fresh interpreter (its peak is its own) that writes ``mib`` MiB, every page, in
    a rule declaring ``mem_mb`` (no resource at all when None); its log's text."""
    import subprocess
    import sys
    from pathlib import Path

    import crl_approx

    log = root / "logs" / "m" / f"{name}.log"
    resources = {} if mem_mb is None else {"mem_mb": mem_mb}
    code = (
        "from types import SimpleNamespace as N\n"
        "from crl_approx.runtime import rule_logging\n"
        f"smk = N(log=[{str(log)!r}], rule='m', params={{}}, threads=1, wildcards={{}}, "
        f"output=[], resources=N(**{resources!r}))\n"
        "with rule_logging(smk):\n"
        f"    block = b'x' * ({mib} << 20)\n"
    )
    scripts = str(Path(crl_approx.__file__).parents[1])
    env = dict(os.environ, PYTHONPATH=scripts)
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    bench = root / "benchmarks" / "m" / f"{name}.tsv"
    bench.parent.mkdir(parents=True, exist_ok=True)
    bench.write_text("s\tmax_rss\n1.0\t1\n")
    return log.read_text()


def test_a_job_logs_its_peak_memory_beside_its_rules_request_and_warns_above_it(tmp_path):
    """The peak is the process's own: a job that writes 200 MiB peaks 190–240 MiB above one that
    writes nothing; the rule's mem_mb is logged beside it, a peak above it is a warning, and the
    run record keeps each rule's largest peak, its job and the request."""
    from crl_approx.render.runrecord import job_memory, job_times

    empty = memory_job(tmp_path, "empty", 0, 4000)
    big = memory_job(tmp_path, "big", 200, 4000)
    tight = memory_job(tmp_path, "tight", 200, 100)
    bare = memory_job(tmp_path, "bare", 0, None)
    logs = tmp_path / "logs" / "m"
    (p0, d0), (p1, d1) = job_memory(logs / "empty.log"), job_memory(logs / "big.log")
    assert d0 == d1 == 4000
    assert 190 <= p1 - p0 <= 240
    assert "WARNING" not in empty + big
    assert "WARNING" in tight and "above mem_mb=100" in tight
    assert job_memory(logs / "bare.log")[1] is None and "mem_mb=none" in bare
    rule = job_times(tmp_path / "benchmarks")["m"]
    assert rule["peak_job"] in ("m/big", "m/tight") and rule["over_jobs"] == 1
    assert rule["peak_mib"] == max(job_memory(logs / f"{n}.log")[0] for n in ("big", "tight"))


@pytest.mark.parametrize("default", ["1", "0"])
def test_every_job_sets_the_allocator_unless_told_not_to(tmp_path, monkeypatch, default):
    """rule_logging calls configure_allocator (glibc: it takes) unless CRL_DEFAULT_ALLOCATOR=1,
    and the job's log says which allocator the job ran with."""
    import sys

    from crl_approx import runtime

    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt: Linux only")
    calls = []
    monkeypatch.setattr(runtime, "configure_allocator", lambda: calls.append(1) or True)
    monkeypatch.setenv("CRL_DEFAULT_ALLOCATOR", default)
    smk = fake_job(tmp_path, "r", f"alloc{default}")
    with runtime.rule_logging(smk):
        pass
    with open(smk.log[0], encoding="utf-8") as fh:
        text = fh.read()
    if default == "1":
        assert not calls and "allocator: glibc's default" in text
    else:
        assert calls == [1] and f"allocator: {runtime.ALLOCATOR_LINE}" in text
