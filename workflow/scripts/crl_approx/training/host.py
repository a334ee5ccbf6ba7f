"""What a training job sets on its host before its first step: the thread count (and
deterministic kernels on CUDA), the allocator, the device."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

from ..runtime import use_job_allocator

log = logging.getLogger(__name__)


def configure_threads(threads: int, device: torch.device) -> None:
    """Fix the thread count: on a CPU the kernels used here are deterministic for a fixed thread
    count. On CUDA, also ask for deterministic algorithms (not on CPU: the call imports torch's
    compiler stack, ~6 s, for nothing). Also keeps the step's allocations in the heap
    (:func:`~crl_approx.runtime.use_job_allocator`)."""
    use_job_allocator()  # a job set it already; benchmarks/step_levers.py's children did not
    torch.set_num_threads(max(1, int(threads)))
    # Subnormal floats (Adam's second moments of tiny gradients) are ~100x slower on x86 CPUs;
    # flushing them to zero changes nothing measurable and speeds up late epochs.
    torch.set_flush_denormal(True)
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)


#: the size of the square product whose speed is the host's peak (n³)
PEAK_N = 2048


def matmul_peak(n: int = PEAK_N, reps: int = 5) -> float:
    """The host's best one-thread float32 FLOP/s on an n³ matmul (sets one thread): what a
    FLOP limit divides by, and what tells two hosts' timings apart."""
    import time

    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = 0.0
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - t))
    return best


def select_device(prefer: str = "auto") -> torch.device:
    """CUDA when a GPU is visible (and not disabled): the card of the slot this job holds
    (:mod:`crl_approx.training.gpu_slots`), else the CPU, with a log line either way."""
    if prefer != "cpu" and torch.cuda.is_available():
        from .gpu_slots import claimed_index

        index = claimed_index()
        dev = torch.device("cuda", index)
        log.info("device: cuda:%d (%s)", index, torch.cuda.get_device_name(index))
    else:
        dev = torch.device("cpu")
        log.info("device: cpu (no GPU visible%s)", "" if prefer == "auto" else ", forced")
    return dev


def cpu_kernels() -> str:
    """The kernel set torch dispatches to on this CPU (AVX2, AVX512, ...) and a short hash of the
    CPU's feature flags (/proc/cpuinfo). Trained numbers are bitwise reproducible on one host; two
    hosts of one model name ("AMD EPYC") may differ here, and then their trained numbers differ
    beyond rounding (float sums in another order), by design."""
    import hashlib

    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    except OSError:
        pass
    digest = hashlib.sha256(flags.encode()).hexdigest()[:8] if flags else "no flags"
    return f"{torch.backends.cpu.get_cpu_capability()}, flags {digest}"
