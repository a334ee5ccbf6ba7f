"""The dynamics' budget check (issue 26): the alignment verdict's statistic at dynamics.budget_check
× the budget, from the runs of rule train_encoder_budget, against its value at the budget.

Under the cosine schedule the learning rate goes to 0 at the end, so a flat validation loss says
little about whether the features have settled: a direction with a tiny eigenvalue moves the loss
by little while its squared cosine can still move by a lot. Where measured, this check decides in
place of the loss measure: an alignment miss counts as a failure exactly when the statistic the
verdict reads (the smallest squared principal cosine, or the smallest capture of the resolvable
directions: :func:`.dynamics.alignment_verdict`) at 2B lies within ``dynamics.alignment_tol`` of
its value at B (:func:`.convergence.budget_agrees`); the same directions are judged (B's
resolvable count).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..integrity import load_json, load_npz, same_job
from ..numerics.alignment import capture_fractions, subspace_alignment


def final_alignment(spec, d: int, ck) -> dict:
    """The last checkpoint's (the last epoch end's) smallest squared cosines of f and g, and per
    direction i ≤ D the smaller of its f and g captures."""
    q = spec.quad
    f, g = ck["f"][-1], ck["g"][-1]
    psi, phi = spec.psi(d), spec.phi(d)
    return {
        "f_min_cos2": subspace_alignment(f, psi, q.wx)["min_cos2"],
        "g_min_cos2": subspace_alignment(g, phi, q.wy)["min_cos2"],
        "captures": np.minimum(capture_fractions(f, psi, q.wx), capture_fractions(g, phi, q.wy)),
    }


def load_budget(spec, metric_paths, ckpt_paths) -> dict:
    """Per (objective, D) of the budget check's runs: seed means of :func:`final_alignment`,
    and the runs' step count."""
    ckpts = {Path(p).parent: p for p in ckpt_paths}
    runs: dict = {}
    for metrics_path in metric_paths:
        meta, rec = load_json(metrics_path, with_record=True)
        ck_path = ckpts[Path(metrics_path).parent]
        ck, ck_rec = load_npz(ck_path, with_record=True)
        same_job([(metrics_path, rec), (ck_path, ck_rec)])
        if not np.array_equal(ck["x_nodes"], spec.quad.x):
            raise ValueError(f"{metrics_path}: checkpoints on another quadrature")
        runs.setdefault((meta["objective"], meta["D"]), []).append(
            final_alignment(spec, meta["D"], ck) | {"steps": meta["steps"]}
        )
    return {
        key: {
            "f_min_cos2": float(np.mean([r["f_min_cos2"] for r in rs])),
            "g_min_cos2": float(np.mean([r["g_min_cos2"] for r in rs])),
            "captures": np.mean([r["captures"] for r in rs], axis=0),
            "steps": int(rs[0]["steps"]),
        }
        for key, rs in runs.items()
    }
