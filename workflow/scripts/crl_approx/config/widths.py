"""Cross-key rules of Experiment W's section (``widths``).

The cell at train.width is the run of rule train_encoder at the sweep's D and objective; where
that run is not part of Table 1 or the LCGM sweep (widths.gmm_dim outside gmm.dims, lcgm.K outside
lcgm.dims, widths.gmm_objective outside train.objectives) the workflow trains it as train_encoder
trains any cell, so no rule ties those keys together. The mixture's D must be one whose λ_D the
spectrum lists, as for gmm.dims.
"""

from __future__ import annotations


def widths_errors(cfg: dict) -> list[str]:
    w, n_eig = cfg["widths"], cfg["gmm"]["n_eigenvalues"]
    if "gmm" in w["grid"] and w["gmm_dim"] > n_eig:
        return [
            f"config key 'widths.gmm_dim': D = {w['gmm_dim']} exceeds gmm.n_eigenvalues = "
            f"{n_eig}; allowed: D <= gmm.n_eigenvalues (as for gmm.dims)"
        ]
    return []
