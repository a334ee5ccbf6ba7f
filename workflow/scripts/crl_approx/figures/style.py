"""One style for every figure, and the helpers the plot modules share."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ..integrity import load_json
from ..runtime import atomic_path

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "svg.fonttype": "none",  # text stays text: selectable, crisp at any zoom
    "svg.hashsalt": "crl-approx",  # deterministic SVG ids
}
COLORS = {"ours": "#1f77b4", "paper": "#d62728", "floor": "#2ca02c", "samples": "#ff7f0e"}


def _save(fig, path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)


def _read_json(paths) -> list[dict]:
    return [load_json(path) for path in paths]


def _mean_sd(ax, x, table, mean_col, sd_col, fmt, **kw) -> None:
    """Mean over seeds with ± sd error bars (a single seed has no sd: no bar)."""
    ax.errorbar(x, table[mean_col], yerr=table[sd_col].fillna(0), fmt=fmt, capsize=3, **kw)


def _dim_axis(ax, dims) -> None:
    """A log2 axis of representation dimensions, ticked at the D of the table."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(dims, [str(d) for d in dims])
    ax.set_xlabel("representation dimension D")
