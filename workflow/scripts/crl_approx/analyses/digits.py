"""Experiment R, the measured side: the exact class operator of pairing 1 (spectrum, tail,
truncation excess, rank-D floor, L*), and every trained run's held-out numbers read from its
checkpoints at the lowest validation loss (early stopping): InfoNCE, excess against τ·PMI
(pairing 1), the MI bound log N − loss/τ, a class probe and the features' effective rank."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import log_softmax

from ..models import digits as dg
from ..numerics.floor import rank_d_floor
from ..numerics.spectrum import OperatorSpectrum, Quadrature, spectrum_table
from .probes import block_infonce, canonical_correlations

log = logging.getLogger(__name__)


# --- the exact class operator ---------------------------------------------------------------------
def class_spectrum(prior: np.ndarray, chan: np.ndarray) -> OperatorSpectrum:
    """The K × K operator of the class PMI as a quadrature with one node per class (weights π for
    x, P_Y for y): the same object as the mixture's, so Table 1's numerics apply unchanged. On the
    images the operator is this one: the PMI depends on the classes only."""
    pmi, p_y = dg.class_pmi(prior, chan)
    k = len(prior)
    quad = Quadrature(
        x=np.arange(k, dtype=float),
        wx=prior,
        y=np.arange(k, dtype=float),
        wy=p_y,
        nodes_per_component=1,
    )
    a = np.sqrt(prior)[:, None] * pmi * np.sqrt(p_y)[None, :]
    u, s, vt = np.linalg.svd(a)
    return OperatorSpectrum(mix=None, quad=quad, pmi=pmi, s=s, u=u, v=vt.T)


def class_table(digits: dict, tau: float) -> pd.DataFrame:
    """Per grouping K and D = 1..K: λ_D, the spectral tail, the truncation excess and I(Z_x; Z_y),
    L* = −τ I; the rank-D floor (L-BFGS from the truncation, Table 1's) at the D < K of the
    grouping's sweep only (NaN elsewhere; at D ≥ K it is 0, the PMI itself being rank K)."""
    frames = []
    for g in digits["groupings"]:
        k = len(g["groups"])
        prior, chan = dg.channel(k, digits["keep_max"], digits["keep_min"])
        spec = class_spectrum(prior, chan)
        table = spectrum_table(spec, range(1, k + 1), tau)
        table["eigenvalue"] = spec.eigenvalues[:k]
        table["rank_d_floor"] = [
            rank_d_floor(spec, d, tau)["rank_d_floor_excess_risk"] if d in g["dims"] else np.nan
            for d in range(1, k + 1)
        ]
        table.loc[table["D"] == k, "rank_d_floor"] = 0.0
        table.insert(0, "K", k)
        frames.append(table.drop(columns=["quadrature_nodes"]))
    return pd.concat(frames, ignore_index=True)


# --- per-run held-out numbers ---------------------------------------------------------------------
def logistic_probe(f_fit, z_fit, f_test, z_test, l2: float, n_classes: int) -> dict:
    """Multinomial logistic regression (with intercept, L2 penalty ``l2`` on the weights) of the
    class from standardised features, fitted by L-BFGS; held-out log-loss (nats) and accuracy."""
    mu, sd = f_fit.mean(0), f_fit.std(0)
    sd = np.where(sd > 0, sd, 1.0)

    def design(f):
        return np.hstack([np.ones((len(f), 1)), (f - mu) / sd])

    a, b = design(f_fit), design(f_test)
    onehot = np.eye(n_classes)[z_fit]

    def loss(w):
        w = w.reshape(a.shape[1], n_classes)
        lp = log_softmax(a @ w, axis=1)
        p = np.exp(lp)
        pen = l2 * np.sum(w[1:] ** 2)
        grad = a.T @ (p - onehot) / len(a)
        grad[1:] += 2 * l2 * w[1:]
        return -np.mean(np.sum(onehot * lp, 1)) + pen, grad.ravel()

    res = minimize(
        loss,
        np.zeros(a.shape[1] * n_classes),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000},
    )
    lp = log_softmax(b @ res.x.reshape(a.shape[1], n_classes), axis=1)
    return {
        "probe_logloss": float(-np.mean(lp[np.arange(len(z_test)), z_test])),
        "probe_accuracy": float(np.mean(lp.argmax(1) == z_test)),
    }


def _entropy_rank(weights: np.ndarray) -> float:
    p = weights / weights.sum() if weights.sum() > 0 else weights
    nz = p[p > 0]
    return float(np.exp(-np.sum(nz * np.log(nz))))


def effective_rank(features: np.ndarray) -> tuple[float, np.ndarray]:
    """exp(entropy of the normalised singular values) of the centred features (Roy & Vetterli),
    and the singular values."""
    s = np.linalg.svd(features - features.mean(0), compute_uv=False)
    return _entropy_rank(s), s


def variance_rank(singular_values) -> float:
    """exp(entropy of s²/Σs²): the effective rank weighted by variance (post hoc, issue 26)."""
    return _entropy_rank(np.asarray(singular_values, float) ** 2)


def mi_bound(heldout_infonce: float, tau: float) -> float:
    """The InfoNCE lower bound on I(X; Y), log N − L_N/τ, from a held-out in-batch loss with N
    candidates; ``heldout_infonce`` (:func:`.probes.block_infonce`) already holds L_N − τ·log N."""
    return -heldout_infonce / tau


def best_checkpoint(metrics: dict) -> int:
    """Early stopping: the checkpoint (0-based) with the lowest validation loss."""
    return int(np.argmin([h["val_loss"] for h in metrics["history"]]))


def evaluate_run(metrics: dict, ckpt, data: dict, digits: dict, tau: float) -> dict:
    """All held-out numbers of one seed's run at its early-stopping checkpoint."""
    from ..training.digits import class_split_pairs, grouping

    pairing, seed = metrics["pairing"], metrics["seed"]
    best = best_checkpoint(metrics)
    f, g = ckpt["f"][best].astype(float), ckpt["g"][best].astype(float)
    labels, codes = data["labels"], data["codes"]
    train, test = np.flatnonzero(codes == 0), np.flatnonzero(codes == 2)
    out = {"pairing": pairing, "D": metrics["D"], "seed": seed, "best_checkpoint": best + 1}
    out["val_loss_best"] = metrics["history"][best]["val_loss"]
    out["val_loss_last"] = metrics["history"][-1]["val_loss"]
    if pairing == "halves":
        k, z = 10, labels
        n = digits["halves_candidates"]
        order = test[np.random.default_rng(seed).permutation(len(test))]
        ft, gt = f[order], g[order]
        out["heldout_infonce"] = block_infonce(lambda sl: ft[sl] @ gt[sl].T, len(order), tau, n)
    else:
        groups = grouping(digits["groupings"], pairing)
        k, z = len(groups), dg.group_of_digit(groups)[labels]
        n = digits["n_candidates"]
        prior, chan = dg.channel(k, digits["keep_max"], digits["keep_min"])
        pmi, _ = dg.class_pmi(prior, chan)
        _, _, p = class_split_pairs(
            data["images"], labels, codes, groups, digits, seed, "test", digits["n_test_pairs"]
        )
        fx, gy = f[p["ix"]], g[p["iy"]]
        loss = block_infonce(lambda sl: fx[sl] @ gy[sl].T, len(fx), tau, n)
        bayes = block_infonce(
            lambda sl: tau * pmi[np.ix_(p["zx"][sl], p["zy"][sl])], len(fx), tau, n
        )
        out |= {
            "heldout_infonce": loss,
            "heldout_infonce_bayes": bayes,
            "heldout_excess": loss - bayes,
        }
        out["mi_bound_bayes"] = mi_bound(bayes, tau)
    out["K"] = k
    out["candidates"] = n
    out["mi_bound"] = mi_bound(out["heldout_infonce"], tau)
    out |= logistic_probe(f[train], z[train], f[test], z[test], digits["probe_l2"], k)
    out["effective_rank"], sv = effective_rank(f[test])
    out["effective_rank_variance"] = variance_rank(sv)
    out["singular_values"] = sv.tolist()
    return out


def halves_cancorr(data: dict) -> pd.DataFrame:
    """Canonical correlations between the train images' top and bottom halves (pixels), and with
    the bottom halves shuffled across images (the baseline of no dependence)."""
    train = data["codes"] == 0
    top, bottom = dg.halves(data["images"][train])
    shuffled = bottom[np.random.default_rng(0).permutation(len(bottom))]
    true, base = canonical_correlations(top, bottom), canonical_correlations(top, shuffled)
    n = min(len(true), len(base))
    return pd.DataFrame(
        {"index": np.arange(1, n + 1), "cancorr": true[:n], "cancorr_shuffled": base[:n]}
    )


def run_classes(digits: dict, tau: float, output) -> pd.DataFrame:
    """The ``compute_digits_operator`` rule: the exact class operator of every grouping."""
    from ..runtime import write_csv

    table = class_table(digits, tau)
    write_csv(table, output.table)
    return table
