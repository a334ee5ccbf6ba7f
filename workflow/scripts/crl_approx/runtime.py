"""What every rule shim shares: logging to the rule's log file, and atomic output writes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import re
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path

log = logging.getLogger("crl_approx")

_job: dict = {"rule": None, "wildcards": {}, "params_sha256": None}


def params_sha256(params: dict) -> str:
    """A stable hash of a rule's params (the config keys the job depends on)."""
    text = json.dumps(params, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@contextlib.contextmanager
def job(rule: str | None, wildcards: dict, params: dict):
    """Declare the running job: every file written inside records it (crl_approx.integrity)."""
    global _job
    saved = _job
    _job = {
        "rule": rule,
        "wildcards": {str(k): str(v) for k, v in dict(wildcards).items()},
        "params_sha256": params_sha256(dict(params)),
    }
    try:
        yield
    finally:
        _job = saved


def current_job() -> dict:
    """The running job's rule, wildcards and params hash (rule None outside a job)."""
    return dict(_job)


#: the line each job's log ends with (parsed by crl_approx.render.runrecord.job_cpu)
CPU_LINE = "job cpu_s={total:.3f} startup_cpu_s={startup:.3f} user_s={user:.3f} sys_s={sys:.3f}"
CPU_PATTERN = re.compile(r"job cpu_s=([0-9.]+) startup_cpu_s=([0-9.]+)")

#: a job's peak resident memory and its largest child's (MiB; :func:`peak_memory_mib`) against
#: its rule's ``mem_mb`` (SLURM's ``--mem``, in MiB; ``none``: not declared), before ``CPU_LINE``
MEMORY_LINE = "job memory peak_mib={peak:.0f} children_peak_mib={kids:.0f} mem_mb={declared}"
MEMORY_PATTERN = re.compile(r"job memory peak_mib=([0-9]+) (?:children\S+ )?mem_mb=([0-9]+|none)")

#: one line per named part of a job (:func:`phase`), logged before ``CPU_LINE``
PHASE_LINE = "job phase {name} cpu_s={cpu:.3f} wall_s={wall:.3f}"
PHASE_PATTERN = re.compile(r"job phase (\w+) cpu_s=([0-9.]+) wall_s=([0-9.]+)")
_phases: dict[str, list[float]] = {}


@contextlib.contextmanager
def phase(name: str):
    """Count the block's CPU seconds (this process, every thread, and the child processes it
    waited for: the compiled step's build) and wall seconds under ``name`` (summed over the job;
    a phase nested in another counts in both). On CUDA a block that only queues work is charged
    where the host waits for it."""
    cpu, wall = time.process_time() + children_cpu(), time.perf_counter()
    try:
        yield
    finally:
        acc = _phases.setdefault(name, [0.0, 0.0])
        acc[0] += time.process_time() + children_cpu() - cpu
        acc[1] += time.perf_counter() - wall


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


#: a training job's lines on its step (``compiled``, ``python (why)``) and kernels (training.native)
STEP_LINE = "job training step: {step}"
STEP_PATTERN = re.compile(r"job training step: (.+)$", re.MULTILINE)
KERNELS_LINE = "job step kernels: {kernels}"
KERNELS_PATTERN = re.compile(r"job step kernels: (.+)$", re.MULTILINE)

#: one line per kind of counted work (:func:`count_flops`), logged before ``CPU_LINE``
FLOP_LINE = "job flop {name}={flop:d}"
FLOP_PATTERN = re.compile(r"job flop (\w+)=([0-9]+)")
_flops: dict[str, int] = {}


def count_flops(name: str, flop: int) -> None:
    """Add ``flop`` floating-point operations of the job's work under ``name`` (the training
    loops count their steps' and validation's matmul work; the run record sums them against the
    host's peak: what the run would cost at its FLOP limit)."""
    _flops[name] = _flops.get(name, 0) + int(flop)


def cpu_seconds() -> tuple[float, float]:
    """(user, system) CPU seconds of this process since it started, and of its waited-for
    children: what the job itself cost, whatever else ran on the host (Snakemake's benchmark
    samples CPU on a timer whose gaps grow to 30 s and loses up to a job's last 30 s)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


#: glibc's mallopt parameters (malloc.h) and the values every job sets: no block of the main
#: thread is a fresh mmap, whatever its size (M_MMAP_MAX 0; another thread's arena still maps a
#: block too large for it), and what is freed stays in the heap (trim and top pad far above)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
ALLOCATOR = {M_MMAP_MAX: 0, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 64 << 20}
#: what a job's log says of the setting
ALLOCATOR_LINE = "every block from the heap, kept"


def configure_allocator() -> bool:
    """Keep a job's freshly allocated arrays in glibc's heap (every job, :func:`rule_logging`):
    by default a block above glibc's mmap threshold is a fresh mmap whose first touch page-faults
    (a sampled training step's 400–550 faults; Experiment S's ~86 MB arrays are above any
    threshold, so the main thread maps none now; benchmarks/allocator.json). The numbers do not
    change (tests/unit/test_allocator.py: training, floor and spectrum bitwise equal with and
    without). Returns whether the settings took (False off glibc)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(param, value) == 1 for param, value in ALLOCATOR.items())


def use_job_allocator() -> bool:
    """The jobs' allocator setting (:func:`configure_allocator`), unless CRL_DEFAULT_ALLOCATOR=1
    (the benchmarks compare glibc's default against it): whether the setting is in place. Called
    by every job (:func:`rule_logging`) and by a training step's set-up outside a job."""
    return os.environ.get("CRL_DEFAULT_ALLOCATOR") != "1" and configure_allocator()


@contextlib.contextmanager
def rule_logging(smk):
    """Send logging and stderr to ``smk.log[0]``; log the rule, its parameters and its wall time.
    A traceback is written to the log before the exception propagates, so that Snakemake's
    ``--show-failed-logs`` shows why a job failed."""
    path = Path(smk.log[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    startup = sum(cpu_seconds())  # the interpreter, Snakemake's preamble and the imports so far
    allocator = use_job_allocator()
    _phases.clear()
    _flops.clear()
    t0 = time.perf_counter()
    log.info("rule %s (python %s, %s)", smk.rule, platform.python_version(), platform.node())
    for name, value in dict(smk.params).items():
        log.info("param %s = %r", name, value)
    log.info("threads = %d", smk.threads)
    log.info("allocator: %s", ALLOCATOR_LINE if allocator else "glibc's default")
    leave = False  # set when the job finished and leaves without the teardown
    try:
        with job(smk.rule, dict(smk.wildcards), dict(smk.params)):
            yield log
    except BaseException:
        log.error("failed after %.2f s:\n%s", time.perf_counter() - t0, traceback.format_exc())
        raise
    else:
        for out in smk.output:
            log.info(
                "wrote %s (%d bytes)", out, os.path.getsize(out) if os.path.exists(out) else -1
            )
        log.info("done in %.2f s", time.perf_counter() - t0)
        for name, (cpu, wall) in _phases.items():
            log.info(PHASE_LINE.format(name=name, cpu=cpu, wall=wall))
        for name, flop in _flops.items():
            log.info(FLOP_LINE.format(name=name, flop=flop))
        peak, kids = peak_memory_mib()
        declared = getattr(getattr(smk, "resources", None), "mem_mb", None)
        log.info(MEMORY_LINE.format(peak=peak, kids=kids, declared=declared or "none"))
        if declared and peak > declared:
            log.warning("peak memory %.0f MiB above mem_mb=%s: raise it", peak, declared)
        user, system = cpu_seconds()
        log.info(CPU_LINE.format(total=user + system, startup=startup, user=user, sys=system))
        leave = skips_teardown(smk)
        if leave:
            log.info(EXIT_LINE)
    finally:
        root.removeHandler(handler)
        handler.close()
        sys.stderr.flush()
    if leave:
        exit_now()


#: set to 1 to let a job's interpreter tear itself down after its last line (:func:`exit_now`)
FULL_EXIT_ENV = "CRL_FULL_EXIT"
#: a job's last log line when it leaves without the teardown
EXIT_LINE = "exit: at once, no interpreter teardown"


def skips_teardown(smk) -> bool:
    """Whether a job that finished leaves without the interpreter's teardown: in a Snakemake
    ``script:`` job (``smk`` is Snakemake's own object and Snakemake's preamble, which sets
    ``__real_file__``, began the script), unless ``CRL_FULL_EXIT=1``; never a test's stand-in."""
    ours = type(smk).__module__.partition(".")[0] == "snakemake"
    script = hasattr(sys.modules.get("__main__"), "__real_file__")
    return ours and script and os.environ.get(FULL_EXIT_ENV) != "1"


def exit_now() -> None:
    """End the process at once, its logs and streams flushed: no interpreter teardown (module
    destructors, torch's static state: CPU after the log's ``CPU_LINE`` that the core's next job
    waited for; benchmarks/job_exit.py). Outputs are closed by then (:func:`atomic_path`), locks go
    with the process. Status 0, or 120 (the interpreter's) when a stream cannot be flushed."""
    logging.shutdown()
    status = 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # any failure to flush is the job's failure
            status = 120
    os._exit(status)


def guarded(train: dict, config: dict) -> dict:
    """A training job's train params plus ``train.max_loss``, read from the config and not passed
    as a param: a divergence guard decides only whether a diverging run stops, so a job that
    finished stays valid when the guard changes (as a param it reran every training job and all
    that reads them). Tighten it and rerun with ``--forcerun`` to re-check finished runs."""
    return {**train, "max_loss": config["train"]["max_loss"]}


def proc_status(field: str) -> str | None:
    """A field of /proc/self/status (its first word), None where there is none (not Linux)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text(errors="replace").splitlines():
            if line.startswith(f"{field}:"):
                return line.split()[1]
    return None


def peak_memory_mib() -> tuple[float, float]:
    """This process's peak resident memory (MiB) since its exec (/proc's VmHWM; getrusage's
    ru_maxrss would keep the peak of the process that spawned it: Snakemake's), and its largest
    waited-for child's (ru_maxrss, which can be this process's at the spawn: an upper bound)."""
    own = proc_status("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB
    return int(own) / 1024, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def current_umask() -> int:
    """The process umask, read without changing it where /proc tells it (no window in which
    another thread would create files with a wrong mask)."""
    with contextlib.suppress(TypeError, ValueError):
        return int(proc_status("Umask"), 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; move it into place only if the block succeeds.

    A crashed job never leaves a half-written output behind. A job killed mid-write (SIGKILL, or
    SIGTERM, whose default action skips the clean-up) leaves its temporary ``.NAME.XXXXXXXX.part``,
    which the next write of the path removes: within a workdir one job writes a given output and
    Snakemake's lock forbids a second run, so such a ``.part`` is a leftover, never a live write."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_parts(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp makes the file 0600 whatever the umask; give it the mode a plain open(…, "w")
        # would, so a shared project (or a web server) can read the results
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def remove_stale_parts(path: Path) -> list[Path]:
    """Remove the temporaries that :func:`atomic_path` of ``path`` left when killed mid-write."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[A-Za-z0-9_]{{8}}\.part")
    stale = [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    for p in stale:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
        log.info("removed %s, left by a job killed while writing %s", p.name, path.name)
    return stale


def write_csv(df, path) -> None:
    """Write a DataFrame as CSV, atomically, with full float precision."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.17g")


def write_yaml(data: dict, path) -> None:
    """``data`` as YAML, atomically (:func:`atomic_path`)."""
    import yaml

    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
