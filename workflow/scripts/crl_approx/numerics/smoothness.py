"""Experiment S's exact numbers: the PMI operator of a noise channel, its decay, the truncation
excess against D and the D needed for each ε.

Quadrature. The PMI has a cusp along the diagonal, so Gauss–Hermite (exact for polynomials times a
Gaussian, spectrally accurate only for smooth integrands) is the wrong rule. Both modalities use the
composite Gauss–Legendre rule on panels: x on ``panels`` equal panels of |x| ≤ 8.5 weighted by
φ(x); y on the same panels inside |y| ≤ 8.5, then panels growing geometrically out to the noise's
reach, weighted by p_Y(y). The error is algebraic in the panel width (the cusp lies inside panels),
so every number is computed at ``panels`` and at ``panels_low`` and an eigenvalue or excess counts
as converged only where the two agree within ``tolerance`` (the Table 1 way: the record holds both).

Fits. γ̂ is the least-squares slope of log λ_i on log i over the converged indices from
``fit_from`` on. An exact computation has no sampling noise: the interval given with γ̂ is the
range of the slopes on the window's two halves and of the same fit at ``panels_low`` (what the
number depends on that is not the world). D(ε) is the first D whose truncation excess (running
minimum over D: a rank-D score contains every smaller truncation) is ≤ ε, and its log-log
interpolation between the bracketing integers; α̂ fits D(ε) ∝ ε^(−α) on the ladder levels reached
at D ≥ ``alpha_from_dim`` with a converged excess.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..models.channel import (
    X_HALF_WIDTH,
    NoiseChannel,
    gauss_legendre_panels,
    gaussian_channel_eigenvalues,
    scale_for_information,
)
from .powerlaw import power_fit
from .spectrum import OperatorSpectrum, Quadrature, infonce_loss, relative_change

log = logging.getLogger(__name__)

#: eigenvalues below this fraction of λ_1 are rounding (the β = 2 world's λ_4/λ_1 is ~1e-30)
RANK_CUTOFF = 1e-12
#: a floor whose largest (whitened) gradient entry exceeds this is not converged (floor_curve)
FLOOR_GRADIENT = 1e-6
#: grid nodes of y whose marginal mass is below this are left out (channel_spectrum)
PRUNE = 1e-16


def channel_spectrum(ch: NoiseChannel, panels: int, order: int, growth: float) -> OperatorSpectrum:
    """The discrete world of the composite Gauss–Legendre grid, and the SVD of its weighted PMI.

    The joint law on the grid is J_ij ∝ w_i φ(x_i) · v_j p_n(y_j − x_i) (w, v the rule's weights),
    normalised to sum 1; its marginals P_X, P_Y are the quadrature's weights and its PMI is
    log J_ij / (P_X(i) P_Y(j)). So every grid is a world of its own whose InfoNCE minimum is
    exactly τ·PMI (an excess is never negative, whatever the resolution), and it converges to the
    channel as the panels shrink. The SVD is of diag(√P_X) · PMI · diag(√P_Y)."""
    x_edges = np.linspace(-X_HALF_WIDTH, X_HALF_WIDTH, panels + 1)
    x, w = gauss_legendre_panels(x_edges, order)
    y, v = gauss_legendre_panels(ch.y_edges(x_edges, growth), order)
    log_j = (
        (np.log(w) - 0.5 * x**2)[:, None]
        + np.log(v)[None, :]
        + ch.log_noise(y[None, :] - x[:, None])
    )
    log_j -= logsumexp(log_j)
    # nodes of marginal mass below PRUNE (the far tails) carry less than 1e-12 of the mass in
    # all; they are left out and the rest renormalised: whitened by √P they would make the
    # floor's L-BFGS ill-conditioned (it stopped at gradients of 1e8 with nodes of mass 1e-300)
    keep = logsumexp(log_j, axis=0) > math.log(PRUNE)
    log_j, y = log_j[:, keep], y[keep]
    keep_x = logsumexp(log_j, axis=1) > math.log(PRUNE)
    log_j, x = log_j[keep_x], x[keep_x]
    log_j -= logsumexp(log_j)
    log_py = logsumexp(log_j, axis=0)
    log_px = logsumexp(log_j, axis=1)
    pmi = log_j - log_px[:, None] - log_py[None, :]
    wx, wy = np.exp(log_px), np.exp(log_py)
    a = np.sqrt(wx)[:, None] * pmi * np.sqrt(wy)[None, :]
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return OperatorSpectrum(
        mix=ch, quad=Quadrature(x, wx, y, wy, panels), pmi=pmi, s=s, u=u, v=vt.T
    )


def excess_curve(spec: OperatorSpectrum, max_dim: int, tau: float) -> pd.DataFrame:
    """Spectral tail and truncation excess L(τ·PMI_D) − L* for D = 1 … max_dim."""
    l_star = infonce_loss(spec, tau * spec.pmi, tau)
    lam = spec.eigenvalues
    rows = []
    for d in range(1, max_dim + 1):
        excess = infonce_loss(spec, tau * spec.truncated_pmi(d), tau) - l_star
        rows.append({"D": d, "spectral_tail": float(lam[d:].sum()), "truncation_excess": excess})
    out = pd.DataFrame(rows)
    out["truncation_excess"] = out["truncation_excess"].clip(lower=0.0)  # rounding below L*
    return out


def decay_fit(lam, lam_low, fit_from: int, tolerance: float) -> dict:
    """γ̂ of λ_i ∝ i^(−γ) on the converged indices ≥ ``fit_from`` (1-based), with the range of the
    fits that vary what the number depends on (the window's halves and start, the resolution)."""
    lam, lam_low = np.asarray(lam, float), np.asarray(lam_low, float)
    n = min(lam.size, lam_low.size)
    lam, lam_low = lam[:n], lam_low[:n]
    above = lam > RANK_CUTOFF * lam[0]
    rank = int(above.sum())
    out = {"rank": rank, "gamma": math.nan, "gamma_lo": math.nan, "gamma_hi": math.nan}
    out |= {"fit_from": fit_from, "fit_to": 0, "n_points": 0, "rms_log_residual": math.nan}
    out["finite_rank"] = bool(rank < n and rank < fit_from)
    converged = above & (relative_change(lam, lam_low) <= tolerance)
    # the window ends at the first index past fit_from that is not converged
    idx = np.arange(1, n + 1)
    window = []
    for i in range(fit_from, n + 1):
        if not converged[i - 1]:
            break
        window.append(i)
    if len(window) < 4:
        return out
    w = np.asarray(window)
    fit = power_fit(w, lam[w - 1])
    half = len(w) // 2
    spread = [
        fit["a"],
        power_fit(w[:half], lam[w[:half] - 1])["a"],
        power_fit(w[half:], lam[w[half:] - 1])["a"],
        power_fit(w, lam_low[w - 1])["a"],
    ]
    # the window's start varied too (2× and 4× fit_from, where 4 points remain): the local slope
    # falls towards its limit along i, so a fixed start alone would bias the range upwards
    for start in (2 * fit_from, 4 * fit_from):
        later = w[w >= start]
        if later.size >= 4:
            spread.append(power_fit(later, lam[later - 1])["a"])
    del idx
    out |= {
        "gamma": fit["a"],
        "gamma_lo": float(np.nanmin(spread)),
        "gamma_hi": float(np.nanmax(spread)),
        "fit_to": int(w[-1]),
        "n_points": int(w.size),
        "rms_log_residual": fit["rms_log_residual"],
    }
    return out


def dims_needed(dims, excess, eps: float) -> tuple[float, float]:
    """(first integer D with running-min excess ≤ ε, its log-log interpolation); NaN if never."""
    dims = np.asarray(dims, float)
    run = np.minimum.accumulate(np.asarray(excess, float))
    hit = np.nonzero(run <= eps)[0]
    if hit.size == 0:
        return math.nan, math.nan
    k = int(hit[0])
    if k == 0:
        return float(dims[0]), float(dims[0])
    e0, e1 = run[k - 1], run[k]
    if e1 <= RANK_CUTOFF * e0:  # a finite-rank world's exact zero: no curve to interpolate
        return float(dims[k]), float(dims[k])
    t = (math.log(e0) - math.log(eps)) / (math.log(e0) - math.log(e1))
    return float(dims[k]), float(math.exp((1 - t) * math.log(dims[k - 1]) + t * math.log(dims[k])))


def world_tables(beta: float, scale: float, s: dict, tau: float) -> dict:
    """Everything Experiment S computes exactly for one world (one ``compute_smoothness`` job)."""
    ch = NoiseChannel(beta, scale)
    t0 = time.perf_counter()
    hi = channel_spectrum(ch, s["panels"], s["order"], s["growth"])
    t1 = time.perf_counter()
    lo = channel_spectrum(ch, s["panels_low"], s["order"], s["growth"])
    t2 = time.perf_counter()
    log.info(
        "beta %g: spectra at %d / %d panels in %.1f / %.1f s",
        beta,
        s["panels"],
        s["panels_low"],
        t1 - t0,
        t2 - t1,
    )
    n = s["n_eigenvalues"]
    lam, lam_lo = hi.eigenvalues[:n], lo.eigenvalues[:n]
    eig = pd.DataFrame({"index": np.arange(1, lam.size + 1), "lambda": lam, "lambda_low": lam_lo})
    eig["rel_change"] = relative_change(eig["lambda"], eig["lambda_low"])
    eig["converged"] = eig["rel_change"] <= s["tolerance"]
    ex = excess_curve(hi, s["max_dim"], tau)
    ex_lo = excess_curve(lo, s["max_dim"], tau)
    ex["truncation_excess_low"] = ex_lo["truncation_excess"]
    ex["rel_change"] = relative_change(ex["truncation_excess"], ex["truncation_excess_low"])
    ex["converged"] = (ex["rel_change"] <= s["tolerance"]) | (
        ex[["truncation_excess", "truncation_excess_low"]].max(axis=1) < RANK_CUTOFF
    )
    fit = decay_fit(lam, lam_lo, s["fit_from"], s["tolerance"])
    mi = float(hi.quad.wx @ (np.exp(hi.pmi) * hi.pmi) @ hi.quad.wy)
    world = {
        "beta": beta,
        "scale": scale,
        "noise_variance": ch.noise_variance(),
        "mutual_information_grid": mi,
        "x_nodes": int(hi.quad.x.size),
        "y_nodes": int(hi.quad.y.size),
        **fit,
        "gamma_predicted": (2.0 * beta + 2.0) if beta < 2 else math.inf,
    }
    eps_rows = []
    for e in s["eps"]:
        d_int, d_interp = dims_needed(ex["D"], ex["truncation_excess"], e)
        ok = bool(np.isfinite(d_int)) and bool(ex.loc[ex["D"] == d_int, "converged"].all())
        eps_rows.append({"eps": e, "D_needed": d_int, "D_interp": d_interp, "converged": ok})
    need = pd.DataFrame(eps_rows)
    use = need[need["converged"] & (need["D_needed"] >= s["alpha_from_dim"])]
    if fit["finite_rank"]:  # D(ε) is the rank at every ε: no growth to fit
        use = use.iloc[:0]
    a = power_fit(1.0 / use["eps"], use["D_interp"]) if len(use) else {"a": math.nan}
    # α̂'s range: the same fit on integer D, and on the smaller half of the ε levels (the ladder's
    # local slope still drifts; neither is sampling noise)
    others = []
    if len(use) >= 3:
        others.append(power_fit(1.0 / use["eps"], use["D_needed"])["a"])
        tail = use.sort_values("eps").iloc[: max(3, len(use) // 2)]
        others.append(power_fit(1.0 / tail["eps"], tail["D_interp"])["a"])
    alphas = [-x for x in [a.get("a", math.nan), *others] if math.isfinite(x)]
    world |= {
        "alpha": -a["a"] if math.isfinite(a.get("a", math.nan)) else math.nan,
        "alpha_lo": min(alphas) if alphas else math.nan,
        "alpha_hi": max(alphas) if alphas else math.nan,
        "alpha_levels": len(use),
        "alpha_predicted": 1.0 / (2.0 * beta + 1.0),
        "alpha_table2": 1.0 / (2.0 * beta),
    }
    if beta == 2.0:
        closed = gaussian_channel_eigenvalues(ch.noise_variance())
        world["closed_form_max_rel_error"] = float(np.max(relative_change(lam[:3], closed)))
    return {
        "world": pd.DataFrame([world]),
        "eigenvalues": eig,
        "excess": ex,
        "eps": need,
        "spectrum": hi,
    }


def solve_scale(beta: float, mi: float) -> float:
    """The noise scale a of the world of shape β at mutual information ``mi`` (logged)."""
    t0 = time.perf_counter()
    a = scale_for_information(beta, mi)
    log.info(
        "beta %g: scale a = %.10g for I(X;Y) = %.6g nats (%.1f s)",
        beta,
        a,
        mi,
        time.perf_counter() - t0,
    )
    return a


def run_world(beta: float, smooth: dict, tau: float, output) -> dict:
    """The ``compute_smoothness`` rule: one world's scale, spectra, excess curve and D(ε)."""
    from ..runtime import write_csv

    scale = solve_scale(beta, smooth["mutual_information"])
    res = world_tables(beta, scale, smooth, tau)
    log.info("world:\n%s", res["world"].T.to_string())
    log.info("D(eps):\n%s", res["eps"].to_string(index=False))
    for name in ("world", "eigenvalues", "excess", "eps"):
        write_csv(res[name], getattr(output, name))
    return res


def floor_converged(row: dict, tolerance: float) -> bool:
    """A floor row of :func:`.floor.floor_rows` is converged where the solve continued with the
    same budget agrees with the first within ``tolerance`` (the doubled-budget check), L-BFGS was
    not stopped by its budget and no gradient entry exceeds FLOOR_GRADIENT (L-BFGS's own
    "CONVERGENCE" proved premature: a run stopped so at 1.66e-3 that another reached 1.52e-3), or
    where both passes are an exact zero; otherwise the row is an upper bound on the floor."""
    first, last = row.get("first_pass_excess", math.nan), row["rank_d_floor_excess_risk"]
    moved = relative_change(np.array([last]), np.array([first]))[0]
    return bool(
        max(first, last) < RANK_CUTOFF
        or (
            moved <= tolerance
            and not row["lbfgs_message"].startswith("STOP")
            and row["max_abs_grad"] <= FLOOR_GRADIENT
        )
    )


def floor_curve(beta: float, scale: float, smooth: dict, tau: float):
    """The best rank-D InfoNCE excess (and the truncation's) for D in ``smooth["dims"]`` on the
    grid of ``floor_panels`` panels, the grid the trained cells are evaluated on."""
    from .floor import floor_rows

    spec = channel_spectrum(
        NoiseChannel(beta, scale), smooth["floor_panels"], smooth["order"], smooth["growth"]
    )
    rows = floor_rows(
        spec,
        smooth["dims"],
        tau,
        max_iter=smooth["floor_iterations"],
        newton_rounds=smooth["floor_newton_rounds"],
    )
    for row in rows:
        row["converged"] = floor_converged(row, smooth["tolerance"])
        row |= {"beta": beta, "floor_panels": smooth["floor_panels"]}
    return pd.DataFrame(rows)


def run_floor(beta: float, world_csv: str, smooth: dict, tau: float, output) -> pd.DataFrame:
    """The ``compute_smoothness_floor`` rule."""
    from ..runtime import write_csv

    scale = float(pd.read_csv(world_csv)["scale"].iloc[0])
    table = floor_curve(beta, scale, smooth, tau)
    write_csv(table, output.floor)
    return table
