"""How README's generated prose prints numbers (the jinja filters of crl_approx.render.readme)."""

from __future__ import annotations

import math
import re
import textwrap


def e(x, sig: int = 3) -> str:
    """Scientific, README style: 1.64e-4 (no zero padding of the exponent)."""
    mantissa, exponent = f"{float(x):.{sig - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("-", "−", 1 if x < 0 else 0)


def pow10(x) -> str:
    """A count as m·10ⁿ with a superscript exponent (10⁷, 3·10⁷); plain digits below 10⁴."""
    x = float(x)
    if abs(x) < 1e4:
        return g(x)
    mantissa, exponent = f"{x:.2e}".split("e")
    sup = str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"10{sup}" if float(mantissa) == 1 else f"{float(mantissa):g}·10{sup}"


def f(x, decimals: int = 3) -> str:
    """Fixed point with a typographic minus."""
    return f"{float(x):.{decimals}f}".replace("-", "−")


def g(x, sig: int = 3) -> str:
    """Significant digits, no exponent for moderate values: 8.8, 12, 2600."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return str(x)
    digits = sig - 1 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):.{max(digits, 0)}f}".replace("-", "−")


def pnum(x, decimals: int = 0) -> str:
    """A fraction as a percentage number, without the sign: 0.793 → 79."""
    return f"{100 * float(x):.{decimals}f}"


def pct(x, decimals: int = 0) -> str:
    return f"{pnum(x, decimals)} %"


def thousands(x) -> str:
    return f"{int(x):,}"


def protocol(name: str) -> str:
    """A study protocol as README writes it: n=1000000 → n = 10⁶."""
    if not name.startswith("n="):
        return f"the {name} stream"
    power = math.log10(int(name[2:]))
    sup = str(int(power)).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
    return f"n = 10{sup}" if power.is_integer() else f"n = {int(name[2:]):,}"


def reflow(text: str, width: int = 100) -> str:
    """Rewrap paragraphs and list items to ``width``; tables and blank lines stay as they are."""
    out, item = [], []

    def flush():
        if item:
            bullet = item[0].startswith("- ")
            joined = re.sub(" {2,}", " ", " ".join(part.strip() for part in item))
            out.extend(
                textwrap.wrap(
                    joined,
                    width,
                    subsequent_indent="  " if bullet else "",
                    break_on_hyphens=False,
                    break_long_words=False,
                )
            )
            item.clear()

    for line in text.splitlines():
        if not line.strip() or line.startswith("|"):
            flush()
            out.append(line)
        elif line.startswith("- "):
            flush()
            item.append(line)
        else:
            item.append(line)
    flush()
    return "\n".join(out)


def span(values, fmt=g, unit: str = "", **kw) -> str:
    """``lo–hi`` (or one value when they print the same), each printed by ``fmt``."""
    vals = [float(v) for v in values]
    lo, hi = fmt(min(vals), **kw), fmt(max(vals), **kw)
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def minsec(seconds) -> str:
    m, s = divmod(round(float(seconds)), 60)
    return f"{m} min {s:02d} s"
