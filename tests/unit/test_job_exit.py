"""A Snakemake job that finished leaves at once (runtime.exit_now): its outputs, its log to the CPU
line and its unflushed stdout all arrive, nothing after the rule_logging block runs, and the exit
status is 0; a failed job still fails with its traceback logged; CRL_FULL_EXIT=1, or an object that
is not Snakemake's, keeps the interpreter's ordinary exit."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crl_approx.runtime import CPU_PATTERN

SCRIPTS = Path(__file__).resolve().parents[2] / "workflow" / "scripts"

CHILD = """
import sys
from types import SimpleNamespace
from snakemake import iocontainers as io
from crl_approx.runtime import atomic_path, rule_logging

log, out, kind, fail = sys.argv[1:5]
if kind == "snakemake":  # the object Snakemake's preamble gives a script
    smk = io.Snakemake(
        io.InputFiles(), io.OutputFiles([out]), io.Params(), io.Wildcards(), 1,
        io.ResourceList(), io.Log([log]), {}, "r", None,
    )
else:
    smk = SimpleNamespace(log=[log], rule="r", params={}, threads=1, wildcards={}, output=[out])
with rule_logging(smk):
    with atomic_path(out) as tmp:
        tmp.write_text("table")
    sys.stdout.write("inside the job\\n")  # left in the buffer: the exit must flush it
    if fail == "1":
        raise RuntimeError("boom")
print("after the block")
"""


def run_child(tmp_path, kind="snakemake", fail=False, full_exit=False):
    log, out = tmp_path / "logs" / "r.log", tmp_path / "out.txt"
    # stdout block-buffered, as in a job started without PYTHONUNBUFFERED
    env = {k: v for k, v in os.environ.items() if k not in ("CRL_FULL_EXIT", "PYTHONUNBUFFERED")}
    env["PYTHONPATH"] = os.pathsep.join([str(SCRIPTS), env.get("PYTHONPATH", "")])
    if full_exit:
        env["CRL_FULL_EXIT"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), str(out), kind, "1" if fail else "0"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return proc, log.read_text() if log.exists() else "", out


def test_a_finished_snakemake_job_exits_at_once_with_everything_written(tmp_path):
    proc, log, out = run_child(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "table"
    assert "inside the job" in proc.stdout  # flushed before the exit
    assert "after the block" not in proc.stdout  # nothing after the block ran
    assert CPU_PATTERN.search(log) and "done in" in log


@pytest.mark.parametrize("kind, full_exit", [("snakemake", True), ("plain", False)])
def test_the_ordinary_exit_where_asked_or_outside_snakemake(tmp_path, kind, full_exit):
    proc, log, out = run_child(tmp_path, kind=kind, full_exit=full_exit)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "table"
    assert proc.stdout.splitlines() == ["inside the job", "after the block"]
    assert CPU_PATTERN.search(log)


def test_a_failed_snakemake_job_still_fails_and_logs_why(tmp_path):
    proc, log, out = run_child(tmp_path, fail=True)
    assert proc.returncode != 0
    assert "RuntimeError: boom" in proc.stderr
    assert "failed after" in log and "RuntimeError: boom" in log
    assert not CPU_PATTERN.search(log)
    assert out.read_text() == "table"  # written before the failure, atomically
    assert "after the block" not in proc.stdout
