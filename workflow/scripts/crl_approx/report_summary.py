"""The verdict summary at the top of the report: each number and claim the paper reports, ours
beside it, the verdict and a link to its section, and the counts per verdict. Every line is
computed from the tables (nothing typed by hand): a config change changes it."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from .verdicts import verdict

#: the order of the verdicts in the counts line
ORDER = (
    "matches printed digits",
    "within 10%",
    "holds",
    "same order of magnitude",
    "differs",
    "fails",
)


def _line(item, ours, paper, label, css, link) -> dict:
    return {"item": item, "ours": ours, "paper": paper, "verdict": label, "css": css, "link": link}


def table1_lines(table1_rows: list[dict], objective: str) -> list[dict]:
    lines = []
    for r in table1_rows:
        d = r["D"]
        for key, name in (("tail", "spectral tail"), ("trunc", "truncation excess")):
            c = r[key]
            lines.append(
                _line(
                    f"Table 1, D = {d}: {name}",
                    c["ours"],
                    c["paper"],
                    c["verdict"],
                    c["css"],
                    "table1",
                )
            )
        for key, name in (("l2", "MLP L2 distance"), ("excess", "MLP excess risk")):
            c = r["mlp"][objective][key]
            lines.append(
                _line(
                    f"Table 1, D = {d}: {name} ({objective})",
                    c["ours"],
                    c["paper"],
                    c["verdict"],
                    c["css"],
                    "table1",
                )
            )
    return lines


def excess_tail_line(spectrum: pd.DataFrame) -> dict:
    """The paper's relation: the truncation's excess is at most (a constant times) the tail; we
    report the largest ratio excess/tail over the D of Table 1 against τ/2, the constant of the
    second-order expansion."""
    ratio = spectrum["truncation_excess_risk"] / spectrum["spectral_tail"]
    worst = float(ratio.max())
    bound = float(spectrum["tau"].iloc[0]) / 2
    ok = worst <= bound
    return _line(
        "truncation excess ≲ spectral tail (every D of Table 1)",
        f"max excess/tail = {worst:.3f}",
        f"≤ τ/2 = {bound:g}",
        "holds" if ok else "fails",
        "match" if ok else "differs",
        "table1",
    )


def lcgm_lines(lcgm: dict) -> list[dict]:
    lines = [
        _line(
            f"LCGM: linear-probe R² at D = K, {c['probe']}",
            c["ours"],
            c["paper"],
            c["verdict"],
            c["css"],
            "lcgm",
        )
        for c in lcgm["comparison"]
    ]
    if lcgm["paper_K"] == lcgm["K"]:
        ok = lcgm["elbow"] == lcgm["K"]
        lines.append(
            _line(
                "LCGM: the alignment quality's elbow is at D = K",
                f"D = {lcgm['elbow']}",
                f"D = K = {lcgm['paper_K']}",
                "holds" if ok else "fails",
                "match" if ok else "differs",
                "lcgm",
            )
        )
    return lines


def noise_lines(noise_table: pd.DataFrame, paper: dict) -> list[dict]:
    pooled = noise_table[(noise_table["dataset"] == "gmm") & (noise_table["seed"] == -1)]
    if not len(pooled):
        return []
    g = pooled.iloc[0]
    lines = []
    for col, lo, hi, key, name in (
        ("mu_hat", "mu_ci_lo", "mu_ci_hi", "mu_hat", "noise exponent μ̂ (mixture)"),
        (
            "rate_exponent",
            "rate_exponent_ci_lo",
            "rate_exponent_ci_hi",
            "rate_exponent",
            "rate (μ̂+1)/(μ̂+2)",
        ),
    ):
        theirs = paper.get(key)
        label, css = verdict(float(g[col]), theirs, digits=4)
        lines.append(
            _line(
                name,
                f"{g[col]:.4f} [{g[lo]:.4f}, {g[hi]:.4f}]",
                "—" if theirs is None else f"{theirs:g}",
                label,
                css,
                "noise",
            )
        )
    return lines


def counts(lines: list[dict]) -> list[dict]:
    tally = Counter(line["verdict"] for line in lines if line["verdict"] != "—")
    known = [v for v in ORDER if v in tally] + sorted(set(tally) - set(ORDER))
    return [{"verdict": v, "n": tally[v]} for v in known]


def summary(table1_rows, objective, spectrum, lcgm, noise_table, paper) -> dict:
    lines = table1_lines(table1_rows, objective)
    lines.append(excess_tail_line(spectrum))
    lines += lcgm_lines(lcgm)
    lines += noise_lines(noise_table, paper["noise"])
    tally = counts(lines)
    total = sum(c["n"] for c in tally)
    return {
        "lines": lines,
        "counts": tally,
        "total": total,
        "sentence": "; ".join(f"{c['n']} of {total} {c['verdict']}" for c in tally),
    }
