"""The hand-written steps of :mod:`.manual` compiled (native_step.cpp), where a C++ compiler is.

The C++ functions issue the same ATen calls as :mod:`.manual`'s Python, in the same order, so a
step's numbers are bitwise the Python step's (tests/unit/test_native_step.py); they save the
interpreter's cost of the ~40 calls per replica and step (benchmarks/step_levers.py, mode
``native``). The extension is built once per source, torch version and Python, with torch's
``cpp_extension`` (g++ and ninja; the job that builds it logs how long it took), into a cache
folder: ``$CRL_NATIVE_DIR``, else ``$XDG_CACHE_HOME/crl-approx/native``, else
``~/.cache/crl-approx/native``.
Concurrent jobs build it once: an ``flock`` (released by the kernel when its holder dies) guards
the build, and a lock file left by a killed build is removed by the next holder.

Every step falls back to the Python twin, with one warning in the job's log naming why, when the
build or the load fails (no compiler, no ninja, no Python headers, a read-only cache), on a
device other than the CPU (the GPU path has not been measured), or when ``CRL_NATIVE_STEP=0``.
The numbers do not depend on which ran.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import os
import sys
import time
from pathlib import Path

import torch

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("native_step.cpp")


def cache_dir() -> Path:
    if os.environ.get("CRL_NATIVE_DIR"):
        return Path(os.environ["CRL_NATIVE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "crl-approx" / "native"


def build_key() -> str:
    """What the built module depends on: the source, torch's version and the interpreter's."""
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(f"{torch.__version__}|{sys.version_info[:2]}|{sys.platform}".encode())
    return digest.hexdigest()[:16]


def enabled() -> bool:
    return os.environ.get("CRL_NATIVE_STEP", "1") != "0"


def module():
    """The compiled module, built first if this key has none; None when ``CRL_NATIVE_STEP=0`` or
    (with a warning, once per process) when it cannot be had."""
    return _module() if enabled() else None


@functools.cache
def _module():
    try:
        return _load()
    except Exception as exc:  # any failure keeps the Python step: the numbers are the same
        first = str(exc).strip().splitlines()
        log.warning(
            "the compiled training step is unavailable (%s: %s); the Python step runs, with the "
            "same numbers (set CRL_NATIVE_STEP=0 to skip the attempt)",
            type(exc).__name__,
            first[0] if first else "",
        )
        return None


def _load():
    from torch.utils import cpp_extension

    from ..runtime import phase

    key = build_key()
    build = cache_dir() / key
    build.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # the job's log counts this part as ``native`` (the build's compiler processes included)
    with phase("native"), open(build / "crl.flock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one builder; the others wait here, then load
        try:
            # torch's own lock file, left behind if a build was killed: nobody else holds ours
            (build / "lock").unlink(missing_ok=True)
            mod = cpp_extension.load(
                name=f"crl_native_step_{key}",
                sources=[str(SOURCE)],
                build_directory=str(build),
                extra_cflags=["-O2"],
                verbose=False,
            )
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)
    seconds = time.perf_counter() - t0
    if seconds > 1.0:
        log.info("built the compiled training step in %.1f s (%s)", seconds, build)
    return mod


def for_device(device: torch.device):
    """The compiled module for steps on ``device``: the CPU's only (None elsewhere)."""
    return module() if torch.device(device).type == "cpu" else None


class Steps:
    """The compiled steps bound to one :class:`.manual.ReplicaWeights`: each takes what its Python
    twin in :mod:`.manual` takes but the weights, and sets the weights' ``grads`` as it does."""

    def __init__(self, mod, weights):
        self.mod, self.weights = mod, weights
        #: every replica's f then g tensors, one list (the optimiser updates them in place)
        self.flat = [t for wf, wg in weights.towers for t in wf + wg]
        self.per_tower = len(weights.towers[0][0]) if weights.towers else 0
        #: each replica's log c (1,) for the cosine score; none for the inner score
        self.scales = [] if weights.log_scale is None else list(weights.scales)

    def in_batch_step(self, x, y, tau: float):
        w = self.weights
        args = (self.flat, self.per_tower, self.scales, w.learn_scale, x, y, tau)
        losses, w.grads = self.mod.in_batch_step(*args)
        return losses

    def in_batch_losses(self, x, y, tau: float):
        return self.mod.in_batch_losses(self.flat, self.per_tower, self.scales, x, y, tau)

    def population_step(self, consts, tau: float):
        w, c = self.weights, consts
        grid = (c.gx, c.gy, c.wx, c.log_wy, c.joint)
        losses, w.grads = self.mod.population_step(
            self.flat, self.per_tower, self.scales, w.learn_scale, *grid, tau
        )
        return losses


def bind(weights, compiled: bool | None = None) -> Steps | None:
    """The compiled steps for ``weights`` (a :class:`.manual.ReplicaWeights`) where they can be
    had and ``compiled`` is not False; None for the Python steps. ``compiled=True`` insists."""
    device = weights.stacked[0][0].device
    mod = None if compiled is False else for_device(device)
    if compiled and mod is None:
        raise RuntimeError("the compiled training step is unavailable (see the log)")
    return None if mod is None else Steps(mod, weights)


def main() -> int:
    """Build (or find) the compiled step now, e.g. before a cluster run: prints where it is, or why
    it could not be had (exit 1)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mod = module()
    if mod is None:
        print("the compiled training step is unavailable: the jobs will run the Python step")
        return 1
    print(f"the compiled training step: {mod.__file__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
