"""The batches the minibatch loops read: every seed's pairs stacked (R, n, d), permuted per
replica epoch after epoch, or drawn fresh from the mixture per seed."""

from __future__ import annotations

import numpy as np
import torch


def epoch_permutations(gens, n: int, device) -> torch.Tensor:
    """One permutation of range(n) per replica, replica r's from its own generator: (R, n)."""
    return torch.stack([torch.randperm(n, generator=g) for g in gens]).to(device)


def as_batches(x: torch.Tensor, perms: torch.Tensor, batch: int) -> torch.Tensor:
    """x (R, n, d) permuted per replica and cut into full batches, laid out (batches, R, batch,
    d) so that every step reads one contiguous block: element [k, r, i] is x[r, perms[r, k·batch
    + i]]. Rows are copied by ``index_select`` (whole rows), not an elementwise ``gather``: the
    same values at a fraction of the CPU for d > 1 (an LCGM pool: d = 16)."""
    r, n, d = x.shape
    nb = n // batch
    out = torch.empty((nb, r, batch, d), dtype=x.dtype, device=x.device)
    for i in range(r):
        rows = x[i].index_select(0, perms[i, : nb * batch])
        out[:, i].copy_(rows.view(nb, batch, d))
    return out


def pool_batches(x: torch.Tensor, y: torch.Tensor, gens, batch: int):
    """Endless (R, batch, d) batches of the pairs x, y (R, n, d): epoch after epoch, each epoch a
    fresh permutation per replica from its generator, full batches only."""
    while True:
        perms = epoch_permutations(gens, x.shape[1], x.device)
        xb, yb = as_batches(x, perms, batch), as_batches(y, perms, batch)
        yield from zip(xb.unbind(0), yb.unbind(0), strict=True)


def fresh_batches(model, seeds, batch: int, dtype, dev):
    """Endless (R, batch, d) batches of ``model`` (the mixture, d = 1, or the LCGM), every batch
    drawn anew: replica r's from seed r's own fresh stream (:func:`..models.data.fresh_blocks`),
    so that a seed's batches depend on nothing but the seed and the batch size."""
    from ..models.data import fresh_blocks

    def block(arrays):  # R arrays (chunk, batch[, d]) -> (chunk, R, batch, d) on the device
        out = np.stack(arrays, 1)
        return torch.as_tensor(out[..., None] if out.ndim == 3 else out, dtype=dtype, device=dev)

    for blocks in zip(*(fresh_blocks(model, s, batch) for s in seeds), strict=True):
        x, y = block([b[0] for b in blocks]), block([b[1] for b in blocks])
        yield from zip(x.unbind(0), y.unbind(0), strict=True)


def stack_pairs(pairs: list[dict], key: str, dtype, dev) -> torch.Tensor:
    """One array of every seed's pairs, stacked to (R, n, d) on the device."""
    shapes = {p[key].shape for p in pairs}
    if len(shapes) != 1:
        raise ValueError(f"the seeds' {key} differ in shape ({sorted(shapes)}): cannot batch")
    return torch.as_tensor(np.stack([p[key] for p in pairs]), dtype=dtype, device=dev)
