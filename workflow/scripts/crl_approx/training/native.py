"""The hand-written steps of :mod:`.manual` compiled (native_step.cpp), where a C++ compiler is.

The C++ functions issue the same ATen calls as :mod:`.manual`'s Python, in the same order, so a
step's numbers are bitwise the Python step's (tests/unit/test_native_step.py); they save the
interpreter's cost of the ~40 calls per replica and step (benchmarks/step_levers.py, mode
``native``). With ``train.step_kernels = fused`` (the default) the sampled inner-score step and
its validation losses run ``fused_in_batch_step`` / ``fused_in_batch_losses`` instead, and the
population step of either score ``fused_population_step``: the compiled step's own loops for the
narrow work (fused_kernels.h), whose numbers differ from the Python step's by float32 rounding
(tests/unit/test_fused_step.py, tests/unit/test_fused_population.py).

The extension is built with torch's ``cpp_extension`` (a C++ compiler, ``$CXX`` or ``c++``, and
ninja; ``-O3 -march=native``) into a cache folder, ``$CRL_NATIVE_DIR``, else
``$XDG_CACHE_HOME/crl-approx/native``, else ``~/.cache/crl-approx/native``, one sub-folder per
:func:`build_key` (the sources and flags, the CPU's flags, torch's version and install, the
interpreter, the machine's architecture and the compiler named by ``$CXX``), which the jobs must
be able to write.

Concurrent jobs build it once: an ``flock`` (released by the kernel when its holder dies) guards
the build; a job waits for it at most :data:`LOCK_WAIT_S` and then runs the Python step. torch's
own lock file, which a build killed mid-way leaves behind and which would make torch wait for ever,
is removed once it is :data:`STALE_LOCK_S` old (a live build touches nothing of it; a younger one
is waited for, within the same bound).

Each job logs which step it runs (``runtime.STEP_LINE``: ``compiled``, or ``python`` and why). The
Python twin runs when the build or the load fails (no compiler, no ninja, no Python headers, a
read-only cache; with a warning naming why), on a device other than the CPU (the GPU path has not
been measured), or with ``CRL_NATIVE_STEP=0``. With ``train.step_kernels = aten`` the numbers do
not depend on which ran; with ``fused`` the sampled inner-score and population cells' do, by
float32 rounding.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import math
import os
import platform
import sys
import sysconfig
import time
from pathlib import Path

import torch

from ..runtime import KERNELS_LINE, STEP_LINE

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("native_step.cpp")
#: what the build reads: the source and the fused kernels it includes
SOURCES = (SOURCE, Path(__file__).with_name("fused_kernels.h"))
#: the compiler's flags: the fused kernels' vectors in this CPU's widest registers (the ATen
#: step's numbers are ATen's, whatever the flags)
CFLAGS = ("-O3", "-march=native")

#: the most seconds a job waits for another job's build before it runs the Python step
LOCK_WAIT_S = 900.0
#: the age at which torch's lock file counts as a killed build's
STALE_LOCK_S = 300.0


def cache_dir() -> Path:
    if os.environ.get("CRL_NATIVE_DIR"):
        return Path(os.environ["CRL_NATIVE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "crl-approx" / "native"


def build_key() -> str:
    """What the built module depends on: the sources and the flags; the CPU's feature flags
    (``-march=native``); torch's version and where it is installed; the interpreter (its ABI tag
    and prefix); the machine's architecture; the compiler ``$CXX`` names (default ``c++``). Two
    environments, or two CPUs, sharing a cache folder build apart."""
    from .host import cpu_kernels

    digest = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES))
    parts = (
        " ".join(CFLAGS),
        cpu_kernels(),
        torch.__version__,
        str(Path(torch.__file__).parent),
        sysconfig.get_config_var("SOABI") or "",
        sys.prefix,
        platform.machine(),
        os.environ.get("CXX", "c++"),
    )
    digest.update("|".join(parts).encode())
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
    except Exception as exc:  # any failure keeps the Python step (ATen's kernels)
        first = str(exc).strip().splitlines()
        log.warning(
            "the compiled training step is unavailable (%s: %s); the Python step runs, with ATen's "
            "kernels (set CRL_NATIVE_STEP=0 to skip the attempt)",
            type(exc).__name__,
            first[0] if first else "",
        )
        return None


def _wait_for_lock(guard, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"another job held the build lock for {wait_s:.0f} s") from None
            time.sleep(0.5)


def _clear_stale_lock(lock: Path, deadline: float) -> None:
    """torch's lock file: removed once it is STALE_LOCK_S old (a killed build's); a younger one
    is waited for until it goes or ages (a build still running elsewhere), up to ``deadline``."""
    while lock.exists():
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return
        if age >= STALE_LOCK_S:
            lock.unlink(missing_ok=True)
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{lock} stayed for {STALE_LOCK_S:.0f} s")
        time.sleep(0.5)


def _load():
    from ..runtime import phase

    key = build_key()
    build = cache_dir() / key
    # the job's log counts this part as ``native`` (the build's compiler processes included; a
    # job that waited for another's build, its wait in the wall time)
    with phase("native"):
        from torch.utils import cpp_extension

        build.mkdir(parents=True, exist_ok=True)
        with open(build / "crl.flock", "w") as guard:
            _wait_for_lock(guard, LOCK_WAIT_S)  # one builder; the others wait here, then load
            fresh, t0 = not any(build.glob("*.so")), time.perf_counter()  # this job builds
            try:
                _clear_stale_lock(build / "lock", time.monotonic() + LOCK_WAIT_S)
                mod = cpp_extension.load(
                    name=f"crl_native_step_{key}",
                    sources=[str(SOURCE)],
                    build_directory=str(build),
                    extra_cflags=list(CFLAGS),
                    verbose=False,
                )
            finally:
                fcntl.flock(guard, fcntl.LOCK_UN)
    if fresh:
        seconds = time.perf_counter() - t0
        log.info("the compiled training step: built in %.1f s (%s)", seconds, build)
    return mod


def for_device(device: torch.device):
    """The compiled module for steps on ``device``: the CPU's only (None elsewhere)."""
    return module() if torch.device(device).type == "cpu" else None


class Steps:
    """The compiled steps bound to one :class:`.manual.ReplicaWeights`: each takes what its Python
    twin in :mod:`.manual` takes but the weights, and sets the weights' ``grads`` as it does.
    With ``fused``, the sampled step of the inner score and its validation losses, and the
    population step of either score, run the fused kernels (``fused_in_batch_step``,
    ``fused_in_batch_losses``, ``fused_population_step``: fused_kernels.h; their rounding is their
    own, not the Python twin's)."""

    def __init__(self, mod, weights, fused: bool = False):
        self.mod, self.weights = mod, weights
        #: every replica's f then g tensors, one list (the optimiser updates them in place)
        self.flat = [t for wf, wg in weights.towers for t in wf + wg]
        self.per_tower = len(weights.towers[0][0]) if weights.towers else 0
        #: each replica's log c (1,) for the cosine score; none for the inner score
        self.scales = [] if weights.log_scale is None else list(weights.scales)
        #: the sampled step's fused kernels: asked for, and the inner score (the cosine score's
        #: sampled step has none)
        self.fused = fused and not self.scales
        #: the population step's fused kernels (either score): asked for
        self.fused_population = fused

    def in_batch_step(self, x, y, tau: float):
        w = self.weights
        if self.fused:
            losses, w.grads, fused = self.mod.fused_in_batch_step(
                self.flat, self.per_tower, x, y, tau
            )
            #: how many replicas the last step ran with the fused kernels (the others: shapes
            #: the kernels do not take, ATen's step)
            self.fused_replicas = fused
            say_kernels(kernels_label(fused, x.shape[0]))
            return losses
        say_kernels("aten")
        args = (self.flat, self.per_tower, self.scales, w.learn_scale, x, y, tau)
        losses, w.grads = self.mod.in_batch_step(*args)
        return losses

    def in_batch_losses(self, x, y, tau: float):
        if self.fused:
            return self.mod.fused_in_batch_losses(self.flat, self.per_tower, x, y, tau)
        return self.mod.in_batch_losses(self.flat, self.per_tower, self.scales, x, y, tau)

    def _padded(self, consts):
        """The grid's log wy (m_pad,) and joint weights (n, m_pad), m rounded up to 16 (padding
        −inf and 0), the fused population step's; made at its first step."""
        if getattr(self, "_pad", (None,))[0] is not consts:
            pad = -consts.log_wy.shape[1] % 16
            lw = torch.nn.functional.pad(consts.log_wy.reshape(-1), (0, pad), value=-math.inf)
            joint = torch.nn.functional.pad(consts.joint, (0, pad))
            self._pad = (consts, lw.contiguous(), joint.contiguous())
        return self._pad[1:]

    def population_step(self, consts, tau: float):
        w, c = self.weights, consts
        grid = (c.gx, c.gy, c.wx, c.log_wy, c.joint)
        args = (self.flat, self.per_tower, self.scales, w.learn_scale, *grid)
        if self.fused_population:
            losses, w.grads, fused = self.mod.fused_population_step(*args, *self._padded(c), tau)
            self.fused_replicas = fused
            say_kernels(kernels_label(fused, len(c.gx)))
            return losses
        say_kernels("aten")
        losses, w.grads = self.mod.population_step(*args, tau)
        return losses


def bind(weights, compiled: bool | None = None, kernels: str = "aten") -> Steps | None:
    """The compiled steps for ``weights`` (a :class:`.manual.ReplicaWeights`) where they can be
    had and ``compiled`` is not False; None for the Python steps. ``compiled=True`` insists.
    ``kernels="fused"`` (train.step_kernels) runs the sampled inner-score step's and the
    population step's fused kernels;
    where the compiled step cannot be had, the Python step runs ATen's, with a warning."""
    device = weights.stacked[0][0].device
    mod = None if compiled is False else for_device(device)
    if compiled and mod is None:
        raise RuntimeError("the compiled training step is unavailable (see the log)")
    fused = kernels == "fused"
    if fused and mod is None:
        log.warning(
            "train.step_kernels = fused needs the compiled step: the Python step runs ATen's "
            "kernels, whose numbers differ from the fused ones by float32 rounding"
        )
    steps = None if mod is None else Steps(mod, weights, fused)
    if steps is not None:
        _say("compiled")
    elif compiled is False:
        _say("python (asked for)")
    else:
        why = "CRL_NATIVE_STEP=0" if not enabled() else "unavailable"
        _say(f"python ({why if device.type == 'cpu' else device.type + ' device'})")
    return steps


@functools.cache
def _say(step: str) -> None:
    """The job's step, logged once per process and kind."""
    log.info(STEP_LINE.format(step=step))


def kernels_label(fused: int, replicas: int) -> str:
    """What a fused step ran, for the job's log: ``fused`` where every replica ran the fused
    kernels (the replicas of a model share their shapes, so all or none do), else ATen's (a hidden
    width or the batch not a multiple of 16, or a single layer)."""
    return "fused" if fused == replicas else "aten (shapes the fused kernels do not take)"


@functools.cache
def say_kernels(kernels: str) -> None:
    """The kernels a sampled or population step ran with, logged at its first step (once per
    process and kind):
    ``fused``, ``aten`` (the cosine score's, or asked for), ATen's where the shapes do not fit
    (:func:`kernels_label`), ``aten (the Python step)`` (:mod:`.manual`)."""
    log.info(KERNELS_LINE.format(kernels=kernels))


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
