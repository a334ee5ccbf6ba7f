"""The best achievable rank-D InfoNCE excess on the quadrature: the floor for any D-dim score.

    floor(D) = min over f, g : → R^D of L(f(x)ᵀ g(y)) − L*,

with L the exact population InfoNCE loss on the foundation's quadrature, so the unknowns are the
values F = f(x_i), G = g(y_j) at the nodes. The temperature only rescales the score, so this is the
same as optimising s = τ·F Gᵀ. Solved by L-BFGS in float64 from the rank-D spectral truncation
(feasible, so the floor never exceeds the truncation's excess).

Preconditioning is what makes this fast and accurate: the unknowns are the L2(P)-whitened values
F̃ = diag(√w_x) F and G̃ = diag(√w_y) G. In the raw values the gradient at a node is proportional
to its weight (1 to 1e-100), the problem is hopelessly ill-conditioned, and L-BFGS stalls well
above the optimum (at D = 8, 1.06e-7 after 4800 iterations raw versus 6.28e-8 after 870 whitened).

With ``newton_rounds`` > 0 (Experiment S) L-BFGS starts from that many rounds of alternating
convex steps instead of the truncation itself. The loss is convex in F for fixed G, separately in
each row f_i (a D-dimensional Newton step per node), and convex in G for fixed F (block-diagonal
Newton steps with a backtracking line search). On the Gaussian channel (β = 2) L-BFGS alone from
the truncation stopped at its budget at 0.146 (D = 1) and 2.4e-4 (D = 2, where the exact floor is
0: InfoNCE ignores the x-only term of a rank-3 PMI), five rounds first reach 0.0292 and 1e-15.

The MLP columns of Table 1 are read against this floor: what an MLP loses above it is optimisation
and parametrisation, not approximation.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from ..models.gmm import GaussianMixture
from .spectrum import OperatorSpectrum, infonce_loss, operator_spectrum

log = logging.getLogger(__name__)


def _softmax_rows(a, weights=None, normalize: bool = True):
    """Each row's log-sum-exp; ``a`` itself becomes the rows' softmax, times ``weights`` (one per
    row) where given (in place: one pass of exp and no temporaries the size of the grid, which the
    L-BFGS evaluations were mostly made of). With ``normalize`` false, ``a`` is left at
    exp(a − max of its row) (a caller that needs only the log-sum-exp saves a pass)."""
    m = a.max(axis=1)
    a -= m[:, None]
    np.exp(a, out=a)
    z = a.sum(axis=1)
    if weights is not None:
        a *= (weights / z)[:, None]
    elif normalize:
        a /= z[:, None]
    return m + np.log(z)


def _logits(f, g, log_wy, tau):
    """The rows' logits s/τ + log w_j, and the score s = F Gᵀ."""
    s = f @ g.T
    a = s / tau
    a += log_wy[None, :]
    return a, s


def _row_loss(f, g, wx, log_wy, joint, tau):
    """Each node x_i's term of the loss: τ w_i lse_j(f_i·g_j/τ + log w_j) − Σ_j J_ij f_i·g_j."""
    a, s = _logits(f, g, log_wy, tau)
    lse = _softmax_rows(a, normalize=False)
    s *= joint
    return tau * wx * lse - s.sum(axis=1)


def _loss_and_grads(f, g, wx, log_wy, joint, tau):
    """The loss Σ_i (τ w_i lse_i − Σ_j J_ij s_ij) at s = F Gᵀ, and its gradients in F and G
    (through dL/ds = w_i softmax_j − J_ij)."""
    ds, s = _logits(f, g, log_wy, tau)
    lse = _softmax_rows(ds, wx)
    loss = tau * (wx @ lse) - np.vdot(joint, s)
    ds -= joint  # dL/ds
    return loss, ds @ g, ds.T @ f


def _ridge(h):
    """h + a relative ridge (directions a zero singular value leaves empty stay unmoved)."""
    scale = np.trace(h, axis1=-2, axis2=-1)[..., None, None]
    return h + (1e-12 * scale + 1e-300) * np.eye(h.shape[-1])


def newton_f_step(f, g, wx, log_wy, joint, tau):
    """Each row's full Newton step for F with G fixed (the D × D Hessian of row i's convex loss,
    ridged, solved against its gradient)."""
    p, _ = _logits(f, g, log_wy, tau)
    _softmax_rows(p)
    m = p @ g
    grad = wx[:, None] * m - joint @ g
    d = g.shape[1]
    egg = (p @ (g[:, :, None] * g[:, None, :]).reshape(-1, d * d)).reshape(-1, d, d)
    hess = _ridge((wx / tau)[:, None, None] * (egg - m[:, :, None] * m[:, None, :]))
    return np.linalg.solve(hess, grad[:, :, None])[:, :, 0]


def newton_f(f, g, wx, log_wy, joint, tau, steps: int = 20):
    """Minimise over F with G fixed: an independent convex problem per row, Newton steps
    (:func:`newton_f_step`) with a per-row backtracking line search (a row that cannot improve
    keeps its value)."""
    for _ in range(steps):
        step = newton_f_step(f, g, wx, log_wy, joint, tau)
        l0 = _row_loss(f, g, wx, log_wy, joint, tau)
        t = np.ones(f.shape[0])
        rows = np.arange(f.shape[0])  # the rows still halving their step (rows are independent)
        for _ in range(40):
            trial = f[rows] - t[rows, None] * step[rows]
            worse = _row_loss(trial, g, wx[rows], log_wy, joint[rows], tau) > l0[rows]
            if not worse.any():
                break
            rows = rows[worse]
            t[rows] *= 0.5
        new = f - t[:, None] * step
        l1 = _row_loss(new, g, wx, log_wy, joint, tau)
        f = np.where((l1 <= l0)[:, None], new, f)
        if np.all(l0 - l1 <= 1e-17):
            break
    return f


def newton_g(f, g, wx, log_wy, joint, tau, steps: int = 20):
    """Minimise over G with F fixed (convex; the rows of G couple through each softmax):
    block-diagonal Newton steps, one D × D block per node y_j, and a backtracking line search."""
    total = lambda gg: float(np.sum(_row_loss(f, gg, wx, log_wy, joint, tau)))  # noqa: E731
    for _ in range(steps):
        p, _ = _logits(f, g, log_wy, tau)
        _softmax_rows(p)
        wp = wx[:, None] * p
        grad = (wp - joint).T @ f
        d = f.shape[1]
        ff = (f[:, :, None] * f[:, None, :]).reshape(-1, d * d)
        hess = _ridge(((wp * (1.0 - p)).T @ ff).reshape(-1, d, d) / tau)
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        l0, t = total(g), 1.0
        while t > 1e-8 and total(g - t * step) >= l0:
            t *= 0.5
        if t <= 1e-8:
            break
        g = g - t * step
    return g


def rank_d_floor(
    spec: OperatorSpectrum,
    d: int,
    tau: float,
    max_iter: int = 20000,
    factors: bool = False,
    newton_rounds: int = 0,
    start: tuple | None = None,
) -> dict:
    """Minimise the quadrature InfoNCE loss over rank-d scores s = F Gᵀ (with ``factors``, the
    optimum's F and G on the nodes too, as ``f`` and ``g``), L-BFGS after ``newton_rounds``
    rounds of alternating convex steps from the truncation, or from ``start`` = (F, G) on the
    nodes (a previous solve's ``f`` and ``g``, to continue it)."""
    q = spec.quad
    nx, ny = q.x.size, q.y.size
    # nodes whose weight underflows to 0 do not enter the loss; keep them out of the unknowns
    keep_x, keep_y = q.wx > 0, q.wy > 0
    sx, sy = np.sqrt(q.wx[keep_x]), np.sqrt(q.wy[keep_y])
    wx = q.wx[keep_x]
    log_wy = np.log(q.wy[keep_y])
    joint = wx[:, None] * q.wy[keep_y][None, :] * np.exp(spec.pmi[np.ix_(keep_x, keep_y)])
    kx, ky = int(keep_x.sum()), int(keep_y.sum())

    def value_and_grad(p):
        f = p[: kx * d].reshape(kx, d) / sx[:, None]
        g = p[kx * d :].reshape(ky, d) / sy[:, None]
        loss, gf, gg = _loss_and_grads(f, g, wx, log_wy, joint, tau)
        return loss, np.concatenate([(gf / sx[:, None]).ravel(), (gg / sy[:, None]).ravel()])

    scale = np.sqrt(tau * spec.s[:d])
    f0 = spec.psi(d)[keep_x] * scale * sx[:, None]
    g0 = spec.phi(d)[keep_y] * scale * sy[:, None]
    l_star = infonce_loss(spec, tau * spec.pmi, tau)
    truncation = value_and_grad(np.concatenate([f0.ravel(), g0.ravel()]))[0]
    if start is not None:
        f0, g0 = start[0][keep_x] * sx[:, None], start[1][keep_y] * sy[:, None]
    if newton_rounds:
        fr, gr = f0 / sx[:, None], g0 / sy[:, None]
        for _ in range(newton_rounds):
            fr = newton_f(fr, gr, wx, log_wy, joint, tau)
            gr = newton_g(fr, gr, wx, log_wy, joint, tau)
        f0, g0 = fr * sx[:, None], gr * sy[:, None]
    res = minimize(
        value_and_grad,
        np.concatenate([f0.ravel(), g0.ravel()]),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 0.0, "gtol": 1e-14},
    )
    # evaluate the optimum with the reference loss code on the full grid
    f = np.zeros((nx, d))
    g = np.zeros((ny, d))
    f[keep_x] = res.x[: kx * d].reshape(kx, d) / sx[:, None]
    g[keep_y] = res.x[kx * d :].reshape(ky, d) / sy[:, None]
    excess = infonce_loss(spec, f @ g.T, tau) - l_star
    return ({"f": f, "g": g} if factors else {}) | {
        "D": int(d),
        "rank_d_floor_excess_risk": float(excess),
        "truncation_excess_risk": float(truncation - l_star),
        "newton_rounds": int(newton_rounds),
        "lbfgs_iterations": int(res.nit),
        "lbfgs_message": str(res.message),
        "max_abs_grad": float(np.abs(res.jac).max()),
    }


def floor_rows(
    spec: OperatorSpectrum, dims, tau: float, max_iter: int = 20000, newton_rounds: int = 0
) -> list[dict]:
    """:func:`rank_d_floor` at each D of ``dims``, timed and logged. With Newton rounds the solve
    is continued once more with the same budget (``newton_rounds`` rounds, then L-BFGS) from its
    optimum: ``first_pass_excess`` is the first solve's, the row the continued one's, so that a
    floor whose doubled budget moves it can be told from one that has converged."""
    rows = []
    for d in dims:
        t0 = time.perf_counter()
        kw = {"max_iter": max_iter, "newton_rounds": newton_rounds}
        row = rank_d_floor(spec, int(d), tau, factors=bool(newton_rounds), **kw)
        if newton_rounds:
            more = rank_d_floor(spec, int(d), tau, start=(row["f"], row["g"]), **kw)
            more["lbfgs_iterations"] += row["lbfgs_iterations"]
            row = more | {"first_pass_excess": row["rank_d_floor_excess_risk"]}
        row["seconds"] = time.perf_counter() - t0
        log.info(
            "rank-%d floor %.6g (truncation %.6g), %d L-BFGS iterations, %.1f s: %s",
            d,
            row["rank_d_floor_excess_risk"],
            row["truncation_excess_risk"],
            row["lbfgs_iterations"],
            row["seconds"],
            row["lbfgs_message"],
        )
        rows.append(row)
    return rows


def floor_table(mix: GaussianMixture, dims, tau: float, nodes: int) -> pd.DataFrame:
    rows = floor_rows(operator_spectrum(mix, nodes), dims, tau)
    return pd.DataFrame([row | {"quadrature_nodes": nodes} for row in rows])


def run(gmm: dict, tau: float, output) -> pd.DataFrame:
    """The ``compute_rank_floor`` rule."""
    from ..runtime import write_csv

    table = floor_table(GaussianMixture.from_config(gmm), gmm["dims"], tau, gmm["quadrature_nodes"])
    write_csv(table, output.floor)
    return table


def recombination_excess(spec: OperatorSpectrum, f, g, tau: float, max_iter: int = 500) -> float:
    """The best excess of a score f(x)ᵀ B g(y) over D × D matrices B, the learned features fixed:
    what re-weighting the learned directions (a new last layer) can reach. InfoNCE is convex in the
    score and the score linear in B, so L-BFGS from the learned score (B = I) finds the optimum;
    the features are first orthonormalised in L2(P) (same spans) so that B is well conditioned."""

    def basis(a, w):
        _, sv, vt = np.linalg.svd(np.sqrt(w)[:, None] * a, full_matrices=False)
        keep = sv > 1e-10 * sv[0]
        return a @ vt[keep].T / sv[keep], vt[keep].T * sv[keep]  # a = basis @ coef.T

    q = spec.quad
    # nodes whose weight is below 1e-30 of the largest change the loss by less than 1e-25: left out
    kx, ky = q.wx > 1e-30 * q.wx.max(), q.wy > 1e-30 * q.wy.max()
    wx, wy = q.wx[kx], q.wy[ky]
    fb, cf = basis(f[kx], wx)
    gb, cg = basis(g[ky], wy)
    log_wy = np.log(wy)
    joint = wx[:, None] * wy[None, :] * np.exp(spec.pmi[np.ix_(kx, ky)])
    shape = (fb.shape[1], gb.shape[1])

    def value_and_grad(b):
        s = fb @ b.reshape(shape) @ gb.T
        ds = s / tau
        ds += log_wy[None, :]
        lse = _softmax_rows(ds, wx)
        ds -= joint
        return tau * (wx @ lse) - np.vdot(joint, s), (fb.T @ ds @ gb).ravel()

    b0 = (cf.T @ cg).ravel()  # f gᵀ = fb (cfᵀ cg) gbᵀ
    res = minimize(value_and_grad, b0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    best = fb @ (res.x if res.fun <= value_and_grad(b0)[0] else b0).reshape(shape) @ gb.T
    score = np.zeros((q.x.size, q.y.size))
    score[np.ix_(kx, ky)] = best
    # evaluated by the reference loss code on the full grid, like the floor
    return float(infonce_loss(spec, score, tau) - infonce_loss(spec, tau * spec.pmi, tau))
