"""The artifact's sections, named once: each one's key (its target, ``snakemake --cores all
lcgm``), its title in the HTML report, and its category in Snakemake's native report.

``workflow/rules/common.smk`` reads :data:`SECTIONS` for every ``report()`` output's category
(:func:`native_category`) and subcategory (:func:`native_subcategory`), and the Snakefile makes one
target rule per section from the outputs the rules file under it: nothing lists a section's
files twice.
"""

from __future__ import annotations

#: key → title, in the HTML report's order (report/templates/index.html.j2)
SECTIONS = {
    "table1": "Table 1: Gaussian mixture",
    "sample_size": "Sample-size study",
    "table2": "Table 2: theory",
    "lcgm": "Experiment 3: LCGM",
    "noise": "Experiment 4: noise exponent",
    "calibration": "Calibration",
    "digits": "Experiment R: real images",
    "dynamics": "Training dynamics",
    "cosine": "Ablation: cosine scores",
    "widths": "Experiment W: tower widths",
    "smoothness": "Experiment S: PMI smoothness",
    "report": "The HTML report",
}

#: sections of experiments of your own (:func:`register`), after the project's, in the order
#: registered
EXTRA: dict[str, str] = {}


def register(key: str, title: str) -> str:
    """An experiment of your own's section: its key and title; returns its native category."""
    if key in SECTIONS or EXTRA.get(key, title) != title:
        raise ValueError(f"section {key!r} exists already")
    EXTRA[key] = title
    return native_category(key)


def all_sections() -> dict[str, str]:
    """The project's sections and those registered, in the report's order."""
    return SECTIONS | EXTRA


#: sections that are not a target of their own (the report is the default target's last job)
NOT_TARGETS = ("report",)
#: the sections that are targets, in order
TARGETS = [key for key in SECTIONS if key not in NOT_TARGETS]

#: a file's kind (its suffix) → its subcategory in the native report
KINDS = {
    ".csv": "Tables",
    ".json": "Tables",
    ".svg": "Figures",
    ".png": "Figures",
    ".html": "Pages",
}


def native_category(key: str) -> str:
    """The native report's category of a section: its title, numbered in the HTML report's order
    (Snakemake sorts categories by name)."""
    every = all_sections()
    return f"{list(every).index(key) + 1:02d} {every[key]}"


def native_subcategory(path: str) -> str:
    """Tables, Figures or Pages, from the file's suffix."""
    for suffix, kind in KINDS.items():
        if str(path).endswith(suffix):
            return kind
    raise ValueError(f"{path}: no native report subcategory for this kind of file")


def targets(outputs_by_category: dict[str, list]) -> dict[str, list]:
    """Each section's target: {key: the report outputs filed under its category}, for the
    sections that are targets (every one but :data:`NOT_TARGETS`); a section with no output is
    an error (a renamed category would otherwise leave an empty target)."""
    out = {}
    for key in all_sections():
        if key in NOT_TARGETS:
            continue
        files = outputs_by_category.get(native_category(key), [])
        if not files:
            raise ValueError(f"section {key!r}: no rule files a report() output under it")
        out[key] = sorted(files)
    return out
