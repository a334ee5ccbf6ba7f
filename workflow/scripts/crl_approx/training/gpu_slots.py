"""One card per concurrent training job on a workstation with several GPUs.

Snakemake's ``--resources gpu=N`` (profiles/local-gpu) lets N training jobs run at once, but every
process would otherwise pick ``cuda:0``. Each job therefore claims a *slot*: one lock file per
visible card (``gpu-<id>.lock`` in :func:`lock_dir`), taken with ``flock`` at the job's start and
held until the process ends. The kernel drops an ``flock`` when its process dies, so a killed job
frees its card at once, with no stale lock to clean up. Card ids are the entries of
``CUDA_VISIBLE_DEVICES`` when it is set (SLURM sets it per job, so jobs that share a node but got
different cards never contend), else 0 … device_count − 1.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

#: the slot this process holds: (index into the visible cards, card id, open lock file)
_claimed: tuple[int, str, object] | None = None


def lock_dir() -> Path:
    """Where the lock files live: $CRL_GPU_LOCK_DIR, else a per-user folder in the temp dir."""
    env = os.environ.get("CRL_GPU_LOCK_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / f"crl-approx-gpus-{os.getuid()}"


def visible_cards() -> list[str]:
    """The ids of the cards this process may use, in torch's index order."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip():
        return [c.strip() for c in env.split(",") if c.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def try_claim(cards: list[str], folder: Path):
    """The first free slot as (index, card id, open lock file), or None when all are held."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, card in enumerate(cards):
        fh = open(folder / f"gpu-{card}.lock", "a+")  # held open for the job's life
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        return index, card, fh
    return None


def claim(cards: list[str], folder: Path, timeout: float = 24 * 3600, poll: float = 0.2):
    """Wait for a free slot (another workflow may hold every card) and return it."""
    deadline = time.monotonic() + timeout
    while True:
        got = try_claim(cards, folder)
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"no free GPU slot among cards {cards} in {folder}")
        time.sleep(poll)


def claimed_index() -> int:
    """This process's card (claimed on first use, held until the process ends), as a torch
    device index."""
    global _claimed
    if _claimed is None:
        cards, folder = visible_cards(), lock_dir()
        _claimed = claim(cards, folder)
        log.info(
            "GPU slot: card %s (cuda:%d of %d visible), lock %s",
            _claimed[1],
            _claimed[0],
            len(cards),
            folder / f"gpu-{_claimed[1]}.lock",
        )
    return _claimed[0]
