"""One tier system for every verdict against the paper: Table 1, the sample-size study's
"reaches" rule and the report's summary all call these functions, so the same pair of numbers
gets the same verdict everywhere.

Three kinds of quantity, three rules:

- **positive scale quantities** (tails, excess risks, L2 distances): relative tiers
  :func:`scale_tier`: equal at the paper's printed significant digits; within 10 %; not resolved
  by our seeds (the paper's value inside the 95 % Student-t interval of our seed mean, only inside
  a factor 10^0.5; *not* counted as reaching: a wide interval admits anything); the same order of
  magnitude (a factor 10^0.5); differs.
- **bounded quantities** (R², exponents, rates): absolute tiers at the paper's printed precision
  :func:`bounded_tier`: within half a unit of its last printed digit; within ``ABS_UNITS`` units;
  differs. A relative tolerance would admit R² = 0.873 against 0.97.
- **a quantity we estimate with an interval** (μ̂): :func:`interval_tier`, the paper's value
  inside or outside our interval.

A quantity derived from another (the rate (μ̂+1)/(μ̂+2) from μ̂) is shown with :data:`DERIVED`,
which the counts skip: it is not separate evidence.
"""

from __future__ import annotations

import math

from scipy import stats

#: the "within 10 %" tier: |ours/paper − 1| <= this
CLOSE_TOLERANCE = 0.10
#: the "same order of magnitude" tier: |log10(ours/paper)| < this (a factor 10^0.5 ≈ 3.16)
ORDER_TOLERANCE = 0.5
#: bounded quantities: "within ±tol" when |ours − paper| <= this many units of the last digit
ABS_UNITS = 2
#: slack for floating-point ties at a tier's boundary (1.1/1.0 − 1 = 0.10000000000000009)
EPS = 1e-12

MATCH = "matches printed digits"
CLOSE = f"within {CLOSE_TOLERANCE:.0%}"
UNRESOLVED = "not resolved by our seeds"
#: the level of the seed-mean interval behind :data:`UNRESOLVED`
SEED_LEVEL = 0.95
ORDER = "same order of magnitude"
DIFFERS = "differs"
DERIVED = "derived (not counted)"
NONE = "—"

#: the tiers that count as reaching the paper (the study's "reaches"); :data:`UNRESOLVED` is
#: not one of them: "our seeds cannot tell" is no evidence of agreement
REACHING = (MATCH, CLOSE)


def _finite(*values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def sig(value: float, digits: int) -> str:
    """``value`` printed to ``digits`` significant digits, as the paper prints it."""
    return f"{value:.{digits - 1}e}"


def seed_half_width(sd, n, level: float = SEED_LEVEL) -> float:
    """Half-width of the Student-t ``level`` interval of a mean over ``n`` seeds with sample sd
    ``sd`` (t·sd/√n, n − 1 degrees of freedom); NaN without an sd or with fewer than 2 seeds."""
    if not _finite(sd, n) or n < 2:
        return math.nan
    return float(stats.t.ppf((1 + level) / 2, n - 1) * sd / math.sqrt(n))


def scale_tier(ours, paper, sd=None, digits: int = 4, n=None) -> str:
    """The tier of a positive scale quantity ``ours`` (a mean over ``n`` seeds, with their sample
    ``sd`` if any) against the paper's ``paper`` printed to ``digits`` significant digits."""
    if not _finite(ours, paper) or paper <= 0:
        return NONE
    if sig(ours, digits) == sig(paper, digits):
        return MATCH
    if ours <= 0:
        return DIFFERS
    ratio = ours / paper
    if abs(ratio - 1) <= CLOSE_TOLERANCE + EPS:
        return CLOSE
    within_order = abs(math.log10(ratio)) < ORDER_TOLERANCE
    half = seed_half_width(sd, n)
    if _finite(half) and abs(ours - paper) <= half * (1 + EPS) and within_order:
        return UNRESOLVED
    return ORDER if within_order else DIFFERS


def bounded_tier(ours, paper, decimals: int) -> str:
    """The tier of a bounded quantity (R², exponent, rate) against the paper's value printed with
    ``decimals`` decimals: half a unit of the last digit matches it, ``ABS_UNITS`` units are
    "within ±tol"."""
    if not _finite(ours, paper):
        return NONE
    unit = 10.0**-decimals
    gap = abs(ours - paper)
    if gap <= 0.5 * unit * (1 + 1e-9):
        return MATCH
    if gap <= ABS_UNITS * unit * (1 + 1e-9):
        return within_abs(decimals)
    return DIFFERS


def within_abs(decimals: int) -> str:
    return f"within ±{ABS_UNITS * 10.0**-decimals:.{decimals}f}"


def inside(level: float) -> str:
    return f"inside our {level:.0%} interval"


def outside(level: float) -> str:
    return f"outside our {level:.0%} interval"


def too_wide(level: float) -> str:
    return f"not resolved by our {level:.0%} interval (wider than ±{CLOSE_TOLERANCE:.0%})"


def interval_tier(paper, lo, hi, level: float = 0.95) -> str:
    """Whether the paper's value lies in our ``level`` interval [lo, hi]. Inside an interval whose
    half-width exceeds ``CLOSE_TOLERANCE`` of the paper's value it is :func:`too_wide` to tell
    (not reaching): a wide interval contains anything."""
    if not _finite(paper, lo, hi):
        return NONE
    if not lo <= paper <= hi:
        return outside(level)
    if (hi - lo) / 2 > CLOSE_TOLERANCE * abs(paper) * (1 + EPS):
        return too_wide(level)
    return inside(level)


#: the interval levels a label can name (its percentage is printed to the unit)
_LEVELS = [p / 100 for p in range(1, 100)]
#: the bounded tiers' decimals a label can name
_DECIMALS = range(13)
#: every label that counts as reaching, missing, or unresolved: a tier is looked up in these,
#: never parsed
REACHING_LABELS = frozenset(
    {*REACHING, *(within_abs(d) for d in _DECIMALS), *(inside(lv) for lv in _LEVELS)}
)
MISSING_LABELS = frozenset({ORDER, DIFFERS, *(outside(lv) for lv in _LEVELS)})
UNRESOLVED_LABELS = frozenset({UNRESOLVED, *(too_wide(lv) for lv in _LEVELS)})


def reaches(tier: str) -> bool:
    """Whether a tier counts as reaching the paper's value (the study's rule)."""
    return tier in REACHING_LABELS


def misses(tier: str) -> bool:
    """Whether a tier says ours and the paper's differ (same order of magnitude, differs, or the
    paper outside our interval): neither reaching nor :data:`UNRESOLVED`."""
    return tier in MISSING_LABELS


def css(tier: str) -> str:
    """The report's class for a tier: match, order (also for an unresolved one), differs or
    none."""
    if tier in (NONE, DERIVED):
        return "none"
    if reaches(tier):
        return "match"
    return "order" if tier == ORDER or tier in UNRESOLVED_LABELS else "differs"


def legend(level: float = 0.95) -> list[tuple[str, str]]:
    """(tier, definition) for the report's legend, from the constants above."""
    factor = 10**ORDER_TOLERANCE
    return [
        (
            MATCH,
            "equal at the paper's printed digits (scale quantities: its 4 significant "
            "digits; bounded ones: within half a unit of its last digit)",
        ),
        (CLOSE, f"|ours/paper − 1| ≤ {CLOSE_TOLERANCE:.2f} (scale quantities)"),
        (
            UNRESOLVED,
            f"outside {CLOSE_TOLERANCE:.0%} but the paper's value lies in our "
            f"{SEED_LEVEL:.0%} Student-t interval of the seed mean (mean ± t·sd/√n), within a "
            f"factor {factor:.2f}: our seeds cannot tell; not counted as reaching",
        ),
        (ORDER, f"within a factor {factor:.2f} (scale quantities)"),
        (
            "within ±u",
            f"|ours − paper| ≤ {ABS_UNITS} units of the paper's last printed digit "
            "(bounded quantities: R², exponents, rates)",
        ),
        (
            inside(level),
            "the paper's value lies in our interval, whose half-width is at most "
            f"{CLOSE_TOLERANCE:.0%} of it (quantities we estimate with an interval: μ̂)",
        ),
        (
            too_wide(level),
            "the paper's value lies in our interval, but the interval is wider than that: "
            "not counted as reaching",
        ),
        (DIFFERS, "none of the above (" + outside(level) + " for an interval)"),
        (DERIVED, "computed from another line (the rate from μ̂); not counted"),
    ]
