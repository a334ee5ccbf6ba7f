"""Experiment 3: the latent-class generative model (LCGM), its exact posteriors and PMI, the
rank-K check, linear probes of learned towers, and the elbow detector.

Model: z ∈ {0..K−1} with prior π; x | z = k ~ N(a·q_k, σ_x² I_{d_x}), y | z = k ~ N(b·u_k,
σ_y² I_{d_y}), x ⟂ y | z. The directions q_k (columns of Q ∈ R^{d_x×K}) and u_k are orthonormal:
Q and U are the Q factors of QR decompositions of Gaussian matrices drawn from ``design_seed``
(two independent streams), so the class means are fixed across the training seeds.

Exact quantities (no sampling): log p(z=k | x) = log π_k − |x − a q_k|²/(2σ_x²) − logsumexp_j(…),
the same for y, and PMI(x, y) = logsumexp_k [log p(k|x) + log p(k|y) − log π_k].
The density ratio r = exp(PMI) = Σ_k p(k|x) p(k|y)/π_k is a sum of K separable terms: the operator
T has rank exactly K (:func:`rank_check` shows it on samples).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from .rng import stream

log = logging.getLogger(__name__)

#: stream keys of the design seed (class-mean directions for x and y)
DESIGN_X, DESIGN_Y = 101, 102


def orthonormal_directions(d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """K orthonormal vectors in R^d (rows), from the QR decomposition of a Gaussian d×K matrix;
    signs fixed so that R has a positive diagonal (the factorisation is then unique)."""
    if k > d:
        raise ValueError(f"K = {k} orthonormal directions do not fit in dimension {d}")
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    return (q * np.sign(np.diag(r))).T


@dataclass(frozen=True)
class LatentClassModel:
    prior: np.ndarray  # (K,)
    means_x: np.ndarray  # (K, d_x)
    sigma_x: float
    means_y: np.ndarray  # (K, d_y)
    sigma_y: float

    @classmethod
    def from_config(cls, c: dict) -> LatentClassModel:
        k = int(c["K"])
        prior = np.full(k, 1.0 / k) if c["prior"] == "uniform" else np.asarray(c["prior"], float)
        if prior.shape != (k,) or np.any(prior <= 0) or abs(prior.sum() - 1) > 1e-9:
            raise ValueError(
                f"lcgm.prior must be 'uniform' or K = {k} positive numbers summing to 1"
            )
        qx = orthonormal_directions(c["d_x"], k, stream(c["design_seed"], DESIGN_X))
        uy = orthonormal_directions(c["d_y"], k, stream(c["design_seed"], DESIGN_Y))
        return cls(
            prior, c["mean_x"] * qx, float(c["sigma_x"]), c["mean_y"] * uy, float(c["sigma_y"])
        )

    @property
    def K(self) -> int:
        return self.prior.shape[0]

    @property
    def d_x(self) -> int:
        return self.means_x.shape[1]

    @property
    def d_y(self) -> int:
        return self.means_y.shape[1]

    @staticmethod
    def _log_post(v, means, sigma, log_prior):
        # −|v − m|²/2σ² up to terms constant in k: (v·m − |m|²/2)/σ²
        logits = (v @ means.T - 0.5 * (means**2).sum(1)) / sigma**2 + log_prior
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def log_post_x(self, x: np.ndarray) -> np.ndarray:
        """log p(z = k | x), shape (n, K)."""
        return self._log_post(x, self.means_x, self.sigma_x, np.log(self.prior))

    def log_post_y(self, y: np.ndarray) -> np.ndarray:
        """log p(z = k | y), shape (n, K)."""
        return self._log_post(y, self.means_y, self.sigma_y, np.log(self.prior))

    def log_ratio_y(self, y: np.ndarray) -> np.ndarray:
        """The K functions log p(z = k | y)/π_k that span the g-side subspace."""
        return self.log_post_y(y) - np.log(self.prior)

    def pmi(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """PMI(x_i, y_j) for every pair: an (n_x, n_y) matrix.

        log Σ_k exp(a_ik + b_jk) as a matrix product after shifting each row by its maximum (one
        BLAS call instead of an n_x × n_y × K logsumexp); the rare entries whose shifted sum
        underflows below 1e-280 are recomputed by logsumexp."""
        a = self.log_post_x(x)
        b = self.log_ratio_y(y)
        a_max = a.max(1, keepdims=True)
        b_max = b.max(1, keepdims=True)
        prod = np.exp(a - a_max) @ np.exp(b - b_max).T
        small = prod < 1e-280
        with np.errstate(divide="ignore"):
            out = np.log(prod) + a_max + b_max.T
        if small.any():
            i, j = np.nonzero(small)
            out[i, j] = logsumexp(a[i] + b[j], axis=1)
        return out

    def pmi_paired(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """PMI(x_i, y_i) for paired rows."""
        return logsumexp(self.log_post_x(x) + self.log_ratio_y(y), axis=1)

    def sample(self, n: int, rng: np.random.Generator):
        z = rng.choice(self.K, size=n, p=self.prior)
        x = self.means_x[z] + self.sigma_x * rng.standard_normal((n, self.d_x))
        y = self.means_y[z] + self.sigma_y * rng.standard_normal((n, self.d_y))
        return x, y, z


# --- design checks --------------------------------------------------------------------------------
def rank_check(model: LatentClassModel, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Singular values (normalised by the largest) of two kernels on a sample x_1..x_n, y_1..y_n:

    * ``ratio``: the density ratio r(x_i, y_j) = Σ_k p(k|x_i) p(k|y_j)/π_k, the operator T on the
      sample; a sum of K separable terms, so its rank is exactly K whatever the anchor noise;
    * ``pmi_xcentred``: PMI(x_i, y_j) minus its mean over y for each x (removing the c(x) that
      InfoNCE cannot see). With a clean anchor PMI(x, ·) = log p(k(x)|·)/π_{k(x)} takes K distinct
      rows, so K singular values stand out; anchor noise (the few x between classes) adds a small
      tail, hence the gap rather than a threshold decides the rank of this kernel.
    """
    pmi = model.pmi(x, y)
    out = {}
    for name, mat in (("ratio", np.exp(pmi)), ("pmi_xcentred", pmi - pmi.mean(1, keepdims=True))):
        s = np.linalg.svd(mat, compute_uv=False)
        out[name] = s / s[0]
    return out


def numerical_rank(sv: np.ndarray, rel_tol: float) -> int:
    """Singular values above ``rel_tol`` (relative to the largest)."""
    return int(np.sum(sv > rel_tol))


def gap_rank(sv: np.ndarray, max_rank: int) -> int:
    """The position of the largest ratio s_i / s_{i+1} among the first ``max_rank`` + 1 values."""
    s = sv[: max_rank + 1]
    return int(np.argmax(s[:-1] / np.maximum(s[1:], 1e-300))) + 1


def design_summary(model: LatentClassModel, x, y, z, rank_x, rank_y, rel_tol: float) -> dict:
    """How clean the anchor is, how hard y is, and the kernels' rank (see :func:`rank_check`)."""
    px = np.exp(model.log_post_x(x))
    py = np.exp(model.log_post_y(y))
    sv = rank_check(model, rank_x, rank_y)
    k = model.K
    true_x = px[np.arange(len(z)), z]
    return {
        "K": k,
        "d_x": model.d_x,
        "d_y": model.d_y,
        "anchor_posterior_of_true_class_mean": float(true_x.mean()),
        "anchor_fraction_above_0.9999": float((true_x >= 0.9999).mean()),
        "bayes_accuracy_x": float((px.argmax(1) == z).mean()),
        "bayes_accuracy_y": float((py.argmax(1) == z).mean()),
        "mutual_information_nats": float(model.pmi_paired(x, y).mean()),
        "rank_tolerance": rel_tol,
        "rank_ratio_kernel": numerical_rank(sv["ratio"], rel_tol),
        "rank_pmi_xcentred_gap": gap_rank(sv["pmi_xcentred"], 4 * k),
        "pmi_xcentred_s_K": float(sv["pmi_xcentred"][k - 1]),
        "pmi_xcentred_s_K+1": float(sv["pmi_xcentred"][k]),
        "singular_values": {name: v[: 2 * k + 2].tolist() for name, v in sv.items()},
    }


# --- probes ---------------------------------------------------------------------------------------
def _with_intercept(a: np.ndarray) -> np.ndarray:
    return np.hstack([np.ones((a.shape[0], 1)), a])


def probe_r2(feat_fit, target_fit, feat_test, target_test) -> np.ndarray:
    """Least squares with intercept from features to each target column, fitted on one sample and
    scored on another: R²_k = 1 − Σ(t − t̂)² / Σ(t − mean t)² on the test sample, per target."""
    coef, *_ = np.linalg.lstsq(_with_intercept(feat_fit), target_fit, rcond=None)
    resid = target_test - _with_intercept(feat_test) @ coef
    total = ((target_test - target_test.mean(0)) ** 2).sum(0)
    return 1.0 - (resid**2).sum(0) / total


def canonical_correlations(a: np.ndarray, b: np.ndarray, rel_tol: float = 1e-10) -> np.ndarray:
    """Canonical correlations between the columns of ``a`` and ``b`` (descending, min(rank) many):
    singular values of Q_aᵀ Q_b for orthonormal bases of the centred column spaces."""

    def basis(m):
        m = m - m.mean(0)
        u, s, _ = np.linalg.svd(m, full_matrices=False)
        return u[:, s > rel_tol * s[0]] if s.size and s[0] > 0 else u[:, :0]

    qa, qb = basis(a), basis(b)
    return np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), 0.0, 1.0)


def row_logsumexp(a: np.ndarray) -> np.ndarray:
    """log Σ_j exp(a_ij) per row of a finite matrix, shifted by the row maximum: the plain numpy
    form, ~5x faster than scipy.special.logsumexp on the 4096 × 4096 blocks of the probes (whose
    generality — signs, weights, infinities — costs 2.4 s of a 3.3 s probe per seed; measured)."""
    m = a.max(axis=1, keepdims=True)
    return np.log(np.exp(a - m).sum(axis=1)) + m[:, 0]


def block_infonce(score_block, n: int, tau: float, block: int) -> float:
    """In-batch InfoNCE averaged over consecutive blocks of ``block`` held-out pairs:
    τ·mean_i [logsumexp_j s(x_i, y_j)/τ − log n] − mean_i s(x_i, y_i), the candidates y_j being the
    block's targets (draws from P_Y). ``score_block(sl)`` returns the score matrix of the pairs in
    slice ``sl``."""
    n_blocks = n // block
    total = 0.0
    for b in range(n_blocks):
        s = score_block(slice(b * block, (b + 1) * block))
        total += tau * (row_logsumexp(s / tau) - np.log(block)).mean() - np.diag(s).mean()
    return total / max(1, n_blocks)


def features(towers, data: dict) -> dict:
    """The learned f and g (float64) on the probe-fit and probe-test splits of ``data``."""
    from .towers import embed

    feats = {}
    for split in ("fit", "test"):
        f, g = embed(towers, data[f"x_{split}"], data[f"y_{split}"])
        feats[f"f_{split}"], feats[f"g_{split}"] = f[0], g[0]  # one model: replica 0
    return feats


def probe_metrics(model: LatentClassModel, feats: dict, data: dict, tau: float, block: int):
    """All probe numbers for one trained model: ``feats`` holds f and g on the fit and test splits
    (f_fit, g_fit, f_test, g_test), ``data`` the raw splits (x_fit, y_fit, x_test, y_test)."""
    post_fit = np.exp(model.log_post_x(data["x_fit"]))
    post_test = np.exp(model.log_post_x(data["x_test"]))
    ratio_fit = model.log_ratio_y(data["y_fit"])
    ratio_test = model.log_ratio_y(data["y_test"])
    r2_f = probe_r2(feats["f_fit"], post_fit, feats["f_test"], post_test)
    r2_g = probe_r2(feats["g_fit"], ratio_fit, feats["g_test"], ratio_test)
    cc_g = canonical_correlations(feats["g_test"], ratio_test)
    cc_f = canonical_correlations(feats["f_test"], post_test)
    k = model.K
    ft, gt = feats["f_test"], feats["g_test"]
    xt, yt = data["x_test"], data["y_test"]
    n = xt.shape[0]
    loss = block_infonce(lambda sl: ft[sl] @ gt[sl].T, n, tau, block)
    loss_star = block_infonce(lambda sl: tau * model.pmi(xt[sl], yt[sl]), n, tau, block)
    return {
        "probe_r2_f": float(r2_f.mean()),
        "probe_r2_g": float(r2_g.mean()),
        # the elbow's headline curve: the mean of the two probe R²
        "alignment_quality": float((r2_f.mean() + r2_g.mean()) / 2),
        "probe_r2_f_per_class": r2_f.tolist(),
        "probe_r2_g_per_class": r2_g.tolist(),
        "cancorr_g": cc_g.tolist(),
        "cancorr_f": cc_f.tolist(),
        # fraction of the K-dimensional target subspace captured: sum of rho_i^2 over K
        "cc_capture_g": float((cc_g**2).sum() / k),
        "cc_capture_f": float((cc_f**2).sum() / k),
        "heldout_infonce": loss,
        "heldout_infonce_bayes": loss_star,
        "heldout_excess": loss - loss_star,
    }


# --- elbow ----------------------------------------------------------------------------------------
def elbow(dims, quality, fraction: float, increasing: bool = True) -> int:
    """The smallest D whose quality has closed ``fraction`` of the gap between the worst and the
    best D of the sweep: q(D) ≥ q_min + fraction·(q_max − q_min) (for a decreasing curve such as an
    excess risk, q(D) ≤ q_max − fraction·(q_max − q_min)). It uses nothing but the curve: the
    elbow sits at K because quality saturates there, not because K is known."""
    d = np.asarray(dims)
    q = np.asarray(quality, float)
    order = np.argsort(d)
    d, q = d[order], q[order]
    lo, hi = q.min(), q.max()
    if increasing:
        ok = q >= lo + fraction * (hi - lo)
    else:
        ok = q <= hi - fraction * (hi - lo)
    return int(d[np.argmax(ok)])


#: the curves the elbow detector reads; the first is the headline "alignment quality"
ELBOW_CURVES = (
    ("alignment_quality", True),
    ("probe_r2_f", True),
    ("probe_r2_g", True),
    ("cc_capture_g", True),
    ("heldout_excess", False),
)
PROBE_METRICS = (
    "alignment_quality",
    "probe_r2_f",
    "probe_r2_g",
    "cc_capture_f",
    "cc_capture_g",
    "heldout_excess",
    "final_val_loss",
    "train_seconds",
)


# --- rules ----------------------------------------------------------------------------------------
def run_design(lcgm: dict, output) -> dict:
    """The ``check_lcgm_design`` rule: anchor cleanliness, Bayes accuracies and the rank-K check
    on a sample drawn from the design seed (not from a training seed)."""
    from .runtime import atomic_path

    model = LatentClassModel.from_config(lcgm)
    x, y, z = model.sample(lcgm["n_probe_test"], stream(lcgm["design_seed"], 103))
    n = lcgm["rank_check_samples"]
    summary = design_summary(model, x, y, z, x[:n], y[:n], lcgm["rank_tolerance"])
    summary["rank_check_samples"] = n
    summary["design_sample"] = len(z)
    for key, value in summary.items():
        if key != "singular_values":
            log.info("%s: %s", key, value)
    with atomic_path(output.design) as tmp:
        tmp.write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def run_probe(lcgm: dict, tau: float, dim: int, seeds, model_paths, pairs_paths, output) -> list:
    """The ``probe_lcgm`` rule, for every seed of one D: probes and held-out excess of each trained
    model, plus the learned features of the first ``lcgm.n_feature_plot`` probe-test points (for
    the 2-D view). One job per D: the model and imports are loaded once, not once per seed."""
    from .runtime import atomic_path
    from .towers import load_model

    model = LatentClassModel.from_config(lcgm)
    n_plot = lcgm["n_feature_plot"]
    out = []
    for i, seed in enumerate(seeds):
        data = dict(np.load(pairs_paths[i]))
        feats = features(load_model(model_paths[i]), data)
        metrics = {
            "D": dim,
            "seed": seed,
            **probe_metrics(model, feats, data, tau, lcgm["n_candidates"]),
        }
        log.info(
            "seed %d: R² f %.4f, R² g %.4f, cc capture g %.4f, held-out excess %.4e",
            seed,
            metrics["probe_r2_f"],
            metrics["probe_r2_g"],
            metrics["cc_capture_g"],
            metrics["heldout_excess"],
        )
        with atomic_path(output.features[i]) as tmp, open(tmp, "wb") as fh:
            np.savez(
                fh,
                f=feats["f_test"][:n_plot],
                g=feats["g_test"][:n_plot],
                z=data["z_test"][:n_plot],
            )
        with atomic_path(output.probes[i]) as tmp:
            tmp.write_text(json.dumps(metrics, indent=1, allow_nan=False) + "\n")
        out.append(metrics)
    return out


def probe_runs(probe_paths, metric_paths) -> pd.DataFrame:
    """One row per (D, seed): probe metrics joined with the training run's metrics."""

    def frame(paths, keep):
        rows = []
        for path in paths:
            with open(path, encoding="utf-8") as fh:
                rows.append({k: v for k, v in json.load(fh).items() if keep(k, v)})
        return pd.DataFrame(rows)

    train_keys = ("D", "seed", "score", "final_val_loss", "train_seconds")
    runs = frame(metric_paths, lambda k, v: k in train_keys)
    probes = frame(probe_paths, lambda k, v: not isinstance(v, list))
    out = runs.merge(probes, on=["D", "seed"], how="outer", validate="one_to_one")
    if out.isna().any().any():
        raise ValueError("probe and training outputs do not cover the same (D, seed) runs")
    return out.sort_values(["D", "seed"], ignore_index=True)


def probe_table(runs: pd.DataFrame, paper: dict, k: int) -> pd.DataFrame:
    """Mean and sd over seeds per D, and the paper's R² values on the row D = K."""
    agg = runs.groupby("D")[list(PROBE_METRICS)].agg(["mean", "std"])
    agg.columns = [f"{m}_{s.replace('std', 'sd')}" for m, s in agg.columns]
    agg.insert(0, "n_seeds", runs.groupby("D")["seed"].nunique())
    out = agg.reset_index()
    out["is_K"] = out["D"] == k
    for key in ("probe_r2_f", "probe_r2_g"):
        out[f"paper_{key}"] = np.where(out["is_K"] & (paper["K"] == k), paper[key], np.nan)
    return out


def elbow_table(table: pd.DataFrame, fraction: float, k: int) -> pd.DataFrame:
    rows = []
    for curve, increasing in ELBOW_CURVES:
        q = table[f"{curve}_mean"]
        rows.append(
            {
                "curve": curve,
                "increasing": increasing,
                "elbow_D": elbow(table["D"], q, fraction, increasing),
                "fraction": fraction,
                "q_min": q.min(),
                "q_max": q.max(),
                "K": k,
            }
        )
    return pd.DataFrame(rows)


def run_assemble(probe_paths, metric_paths, paper_path, lcgm: dict, output) -> pd.DataFrame:
    """The ``assemble_lcgm`` rule: per-run table, probe table and elbow table."""
    from .config import load_paper_values
    from .runtime import write_csv

    runs = probe_runs(probe_paths, metric_paths)
    table = probe_table(runs, load_paper_values(paper_path)["lcgm"], lcgm["K"])
    elbows = elbow_table(table, lcgm["elbow_fraction"], lcgm["K"])
    for row in elbows.itertuples():
        log.info("elbow of %s: D = %d (K = %d)", row.curve, row.elbow_D, row.K)
    write_csv(runs, output.runs)
    write_csv(table, output.table)
    write_csv(elbows, output.elbow)
    return table
