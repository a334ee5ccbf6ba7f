"""Cross-key rules of Experiment W's section (``widths``).

The mixture's cell at train.width is the run of rule train_encoder at the sweep's D and objective;
where that run is not part of Table 1 (widths.gmm_objective outside train.objectives) the workflow
trains it as train_encoder trains any cell. The mixture's D must be one of gmm.dims: its exact
rank-D floor (rule compute_rank_floor, Table 1's) is what the approximation part subtracts. A
dimension-sweep world needs orthonormal class directions (d >= lcgm.K) and must differ from the
LCGM's own dimensions (it would repeat its cells); its levels are read on the LCGM's ladder, so they
must be levels of widths.eps.
"""

from __future__ import annotations


def widths_errors(cfg: dict) -> list[str]:
    w, errors = cfg["widths"], []
    if "gmm" in w["grid"] and w["gmm_dim"] not in cfg["gmm"]["dims"]:
        errors.append(
            f"config key 'widths.gmm_dim': D = {w['gmm_dim']} is not in gmm.dims "
            f"{cfg['gmm']['dims']}; allowed: a D of gmm.dims (its exact rank-D floor is "
            f"computed there)"
        )
    if w["budget_check_scope"] == "sweeps" and w["budget_check"] <= 1:
        errors.append(
            "config key 'widths.budget_check_scope': sweeps needs widths.budget_check > 1 "
            f"(it is {w['budget_check']}: no cell is trained again); allowed: widest, or sweeps "
            "with a budget_check of 2 or more"
        )
    if "lcgm" in w["grid"]:
        lcgm = cfg["lcgm"]
        extra = sorted(set(w["dim_sweep"]["eps"]) - set(w["eps"]))
        if extra:
            errors.append(
                f"config key 'widths.dim_sweep.eps': {extra} not in widths.eps {w['eps']}; "
                f"allowed: levels of widths.eps (the ladder the widths are read on)"
            )
        for d in w["dim_sweep"]["dims"]:
            if d < lcgm["K"]:
                errors.append(
                    f"config key 'widths.dim_sweep.dims': d = {d} is below lcgm.K = {lcgm['K']}; "
                    f"allowed: d >= lcgm.K (K orthonormal class directions in d dimensions)"
                )
            elif d == lcgm["d_x"] == lcgm["d_y"]:
                errors.append(
                    f"config key 'widths.dim_sweep.dims': d = {d} is the LCGM's own d_x = d_y; "
                    f"allowed: other dimensions (the LCGM's own is always swept)"
                )
    return errors
