"""A Snakemake job that finished leaves at once (runtime.exit_now): its outputs, its log to the CPU
line and its unflushed stdout all arrive, nothing after the rule_logging block runs and no atexit
handler either (the teardown is skipped, not merely shortened), and the exit status is 0; a failed
job still fails with its traceback logged, and a stream that cannot be flushed is a failure (120);
CRL_FULL_EXIT=1, an object that is not Snakemake's, or Snakemake's object in a process that
Snakemake's preamble did not start keeps the interpreter's ordinary exit."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crl_approx.runtime import CPU_PATTERN, EXIT_LINE

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow" / "scripts"

CHILD = """
import atexit, os, sys
from types import SimpleNamespace
from snakemake import iocontainers as io
from crl_approx.runtime import atomic_path, rule_logging

log, out, kind, how, marker = sys.argv[1:6]
atexit.register(lambda: open(marker, "w").close())  # the ordinary exit runs it
if kind != "plain":  # the object Snakemake's preamble gives a script
    smk = io.Snakemake(
        io.InputFiles(), io.OutputFiles([out]), io.Params(), io.Wildcards(), 1,
        io.ResourceList(), io.Log([log]), {}, "r", None,
    )
    if kind == "snakemake":  # what Snakemake's preamble sets in the script it runs
        __real_file__ = "<stand-in>"
else:
    smk = SimpleNamespace(log=[log], rule="r", params={}, threads=1, wildcards={}, output=[out])
with rule_logging(smk):
    with atomic_path(out) as tmp:
        tmp.write_text("table")
    sys.stdout.write("inside the job\\n")  # left in the buffer: the exit must flush it
    if how == "fail":
        raise RuntimeError("boom")
    if how == "closed":  # nowhere to flush the buffer to
        os.close(1)
print("after the block")
"""


def run_child(tmp_path, kind="snakemake", how="ok", full_exit=False):
    log, out, marker = tmp_path / "logs" / "r.log", tmp_path / "out.txt", tmp_path / "atexit"
    # stdout block-buffered, as in a job started without PYTHONUNBUFFERED
    env = {k: v for k, v in os.environ.items() if k not in ("CRL_FULL_EXIT", "PYTHONUNBUFFERED")}
    env["PYTHONPATH"] = os.pathsep.join([str(SCRIPTS), env.get("PYTHONPATH", "")])
    if full_exit:
        env["CRL_FULL_EXIT"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), str(out), kind, how, str(marker)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return proc, log.read_text() if log.exists() else "", out, marker.exists()


def test_a_finished_snakemake_job_exits_at_once_with_everything_written(tmp_path):
    proc, log, out, atexit_ran = run_child(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "table"
    assert "inside the job" in proc.stdout  # flushed before the exit
    assert "after the block" not in proc.stdout  # nothing after the block ran
    assert not atexit_ran  # nor the interpreter's teardown
    assert CPU_PATTERN.search(log) and log.rstrip().endswith(EXIT_LINE)


@pytest.mark.parametrize(
    "kind, full_exit", [("snakemake", True), ("plain", False), ("no-preamble", False)]
)
def test_the_ordinary_exit_where_asked_or_outside_a_snakemake_script(tmp_path, kind, full_exit):
    proc, log, out, atexit_ran = run_child(tmp_path, kind=kind, full_exit=full_exit)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "table"
    assert proc.stdout.splitlines() == ["inside the job", "after the block"]
    assert atexit_ran
    assert CPU_PATTERN.search(log) and EXIT_LINE not in log


def test_a_failed_snakemake_job_still_fails_and_logs_why(tmp_path):
    proc, log, out, _ = run_child(tmp_path, how="fail")
    assert proc.returncode != 0
    assert "RuntimeError: boom" in proc.stderr
    assert "failed after" in log and "RuntimeError: boom" in log
    assert not CPU_PATTERN.search(log)
    assert out.read_text() == "table"  # written before the failure, atomically
    assert "after the block" not in proc.stdout


def test_a_stream_that_cannot_be_flushed_fails_the_job(tmp_path):
    """stdout's buffer has nowhere to go: the interpreter's own exit says 120, and so must the
    exit at once (a lost write is not a success)."""
    fast, *_ = run_child(tmp_path / "fast", how="closed")
    full, *_ = run_child(tmp_path / "full", how="closed", full_exit=True)
    assert full.returncode == 120
    assert fast.returncode == 120
