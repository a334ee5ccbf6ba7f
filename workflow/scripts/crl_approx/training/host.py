"""What a training job sets on its host before its first step: the thread count (and
deterministic kernels on CUDA), the allocator, the device."""

from __future__ import annotations

import logging
import os

import torch

log = logging.getLogger(__name__)


#: glibc's mallopt parameters (malloc.h) and the values a training job sets: every block up to
#: 32 MiB (glibc's largest mmap threshold on 64-bit) from the heap, never returned to the system
#: between steps (trim and top pad far above a job's working set)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
ALLOCATOR = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 64 << 20}


def configure_allocator() -> bool:
    """Keep a training step's freshly allocated outputs in glibc's heap. By default every block
    above the (dynamic) mmap threshold is a fresh mmap and its first touch page-faults: 400–550
    faults per sampled step, 6–10 % of its CPU in the kernel (issue 35). The numbers do not change
    (an allocator places memory, it computes nothing: tests/unit/test_allocator.py trains with and
    without it, bitwise equal). Returns whether the settings took (False off glibc)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(param, value) == 1 for param, value in ALLOCATOR.items())


def configure_threads(threads: int, device: torch.device) -> None:
    """Fix the thread count: on a CPU the kernels used here are deterministic for a fixed thread
    count. On CUDA, also ask for deterministic algorithms (not on CPU: the call imports torch's
    compiler stack, ~6 s, for nothing). Also keeps the step's allocations in the heap
    (:func:`configure_allocator`)."""
    if os.environ.get("CRL_DEFAULT_ALLOCATOR") != "1":  # benchmarks/step_levers.py compares
        configure_allocator()
    torch.set_num_threads(max(1, int(threads)))
    # Subnormal floats (Adam's second moments of tiny gradients) are ~100x slower on x86 CPUs;
    # flushing them to zero changes nothing measurable and speeds up late epochs.
    torch.set_flush_denormal(True)
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)


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
