"""What a training run sees of its data: the pairs seen and the distinct pairs of a protocol
(no torch here, so the analyses can count without importing the trainer)."""

from __future__ import annotations


def pair_counts(pool, steps: int, batch_size: int) -> tuple[int, int]:
    """(pairs seen, distinct pairs) of a run: steps × batch seen; a fresh stream's are all
    distinct, a pool's at most its size."""
    seen = int(steps) * int(batch_size)
    return seen, seen if pool == "fresh" else min(int(pool), seen)
