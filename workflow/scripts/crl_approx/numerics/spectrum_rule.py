"""What the ``compute_spectrum`` rule writes (Table 1's columns 1–2): the spectrum's tables at the
configured node count, their convergence against a coarser one, and the cross-checks by direct
integration. Apart from :mod:`.spectrum` so that the jobs that only need the operator (training,
evaluation) do not import pandas."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..models.gmm import GaussianMixture
from .spectrum import (
    OperatorSpectrum,
    eigenvalue_table,
    infonce_loss,
    mutual_information,
    operator_spectrum,
    relative_change,
    spectrum_table,
)

log = logging.getLogger(__name__)

#: eigenvalues below this fraction of λ_1 are left out of the convergence record
EIGENVALUE_CONVERGENCE_CUTOFF = 1e-9

#: the numbers of spectrum.csv that the convergence record compares
CONVERGED_COLUMNS = (
    "spectral_tail",
    "truncation_excess_risk",
    "l2_truncation_error",
    "truncation_l2_selfnorm",
    "mutual_information",
)


def convergence_table(high: pd.DataFrame, low: pd.DataFrame, spec_hi, spec_lo, n_eig: int):
    """Every reported number at the configured and at the lower node count, long format."""
    import pandas as pd

    rows = []
    for col in CONVERGED_COLUMNS:
        for (_, h), (_, lo) in zip(high.iterrows(), low.iterrows(), strict=True):
            rows.append({"quantity": col, "D": int(h["D"]), "value": h[col], "value_low": lo[col]})
    # eigenvalues above 1e-9 λ_1; the smaller ones are at the level of the discretisation error
    # and contribute < 1e-8 relative to any reported tail
    lam_hi, lam_lo = spec_hi.eigenvalues, spec_lo.eigenvalues
    cutoff = EIGENVALUE_CONVERGENCE_CUTOFF * max(lam_hi[0], 1e-300)
    for i in range(min(n_eig, lam_lo.size)):
        if lam_hi[i] > cutoff:
            rows.append(
                {"quantity": "lambda", "D": i + 1, "value": lam_hi[i], "value_low": lam_lo[i]}
            )
    out = pd.DataFrame(rows)
    out["rel_change"] = relative_change(out["value"], out["value_low"])
    out["nodes"] = spec_hi.quad.nodes_per_component
    out["nodes_low"] = spec_lo.quad.nodes_per_component
    return out


@dataclass
class SpectrumResult:
    eigenvalues: pd.DataFrame
    spectrum: pd.DataFrame
    convergence: pd.DataFrame
    spec: OperatorSpectrum  # the operator at the configured node count

    @property
    def max_rel_change(self) -> float:
        return float(self.convergence["rel_change"].max())


def compute_spectrum(
    mix: GaussianMixture, tau: float, dims, nodes: int, nodes_low: int, n_eigenvalues: int
) -> SpectrumResult:
    """What the ``compute_spectrum`` rule writes, at ``nodes`` and checked at ``nodes_low``."""
    t0 = time.perf_counter()
    spec = operator_spectrum(mix, nodes)
    table = spectrum_table(spec, dims, tau)
    log.info("spectrum at %d nodes/component: %.2f s", nodes, time.perf_counter() - t0)
    t1 = time.perf_counter()
    spec_lo = operator_spectrum(mix, nodes_low)
    table_lo = spectrum_table(spec_lo, dims, tau)
    log.info("spectrum at %d nodes/component: %.2f s", nodes_low, time.perf_counter() - t1)
    conv = convergence_table(table, table_lo, spec, spec_lo, n_eigenvalues)
    table["convergence_rel_change"] = [
        conv.loc[(conv["D"] == d) & (conv["quantity"] != "lambda"), "rel_change"].max()
        for d in table["D"]
    ]
    return SpectrumResult(eigenvalue_table(spec, n_eigenvalues), table, conv, spec)


def run(gmm: dict, tau: float, output) -> SpectrumResult:
    """The ``compute_spectrum`` rule: write eigenvalues, spectrum, convergence and cross-checks."""
    from ..runtime import write_csv
    from .crosscheck import crosscheck_table

    mix = GaussianMixture.from_config(gmm)
    keys = ("dims", "quadrature_nodes", "convergence_nodes", "n_eigenvalues")
    res = compute_spectrum(mix, tau, *(gmm[k] for k in keys))
    worst = res.convergence.loc[res.convergence["rel_change"].idxmax()]
    log.info(
        "largest relative change %d -> %d nodes/component: %.3g (%s, D/index %d)",
        gmm["quadrature_nodes"],
        gmm["convergence_nodes"],
        res.max_rel_change,
        worst["quantity"],
        worst["D"],
    )
    t0 = time.perf_counter()
    spec = res.spec
    checks = crosscheck_table(
        mix,
        {
            "mutual_information": mutual_information(spec),
            "minus_L_star_over_tau": -infonce_loss(spec, tau * spec.pmi, tau) / tau,
            "sum_lambda": float(np.sum(spec.eigenvalues)),
        },
    )
    log.info(
        "cross-checks by direct integration (%.2f s):\n%s",
        time.perf_counter() - t0,
        checks.to_string(index=False),
    )
    log.info("spectrum:\n%s", res.spectrum.to_string(index=False))
    write_csv(res.eigenvalues, output.eigenvalues)
    write_csv(res.spectrum, output.spectrum)
    write_csv(res.convergence, output.convergence)
    write_csv(checks, output.crosschecks)
    return res
