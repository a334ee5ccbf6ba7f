"""Formatting and verdicts shared by the report's sections: how a number is printed and how it
compares with the paper's."""

from __future__ import annotations

import math

from ..numerics import tiers


def fmt(value, digits: int = 4) -> str:
    """A number as the paper prints it (4 significant digits, scientific)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits - 1}e}"


def verdict(ours, paper, digits: int = 4, sd=None, n=None) -> tuple[str, str]:
    """(label, css class) of a positive scale quantity (a mean over ``n`` seeds with sample sd
    ``sd``, if any) against the paper's, printed to ``digits`` significant digits
    (:func:`crl_approx.numerics.tiers.scale_tier`)."""
    label = tiers.scale_tier(ours, paper, sd, digits, n)
    return label, tiers.css(label)


def fmt_sd(value) -> str:
    """A standard deviation beside a mean printed by :func:`fmt` (2 significant digits)."""
    return fmt(value, 2)


def mean_sd(mean, sd, show=fmt, show_sd=None) -> str:
    """``mean ± sd``, each printed by ``show`` (the sd by ``show_sd`` if given); no ± part when
    the sd is missing (a single seed)."""
    text = show(mean)
    if sd is not None and math.isfinite(sd):
        text += f" ± {(show_sd or show)(sd)}"
    return text


def cell(ours, paper, sd=None, note: str = "", n=None) -> dict:
    """One Table 1 cell: ours (± sd over ``n`` seeds), the paper's value (or ``note`` where it has
    none, e.g. "not the paper's setting"), ours/paper and the tier."""
    label, css = verdict(ours, paper, sd=sd, n=n)
    ratio = ours / paper if paper and ours is not None and math.isfinite(ours) else None
    return {
        "ours": mean_sd(ours, sd, fmt, fmt_sd),
        "paper": note if paper is None and note else fmt(paper),
        "ratio": f"{ratio:.3f}" if ratio is not None and math.isfinite(ratio) else "—",
        "verdict": label,
        "css": css,
    }
