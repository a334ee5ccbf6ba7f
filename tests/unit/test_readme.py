"""README's measured numbers are generated (crl_approx.render.readme), never typed.

The blocks that read only the tracked benchmark records are re-rendered here and must equal
README's; the blocks that read a run's results/ are checked against a default run in
tests/e2e/test_readme_numbers.py. Outside the blocks, README may hold configuration values,
protocol constants, test thresholds and versions, but no measured number: a scanner finds every
number there and each must be one of those (it flags a planted measurement, tested).
"""

import json
import math
import re
import shutil

import pytest

from conftest import REPO
from crl_approx.config import load_paper_values
from crl_approx.render import readme, runrecord

README = REPO / "README.md"
#: README tables whose every number tests/e2e/test_readme_numbers.py checks against a default run
#: (typed, outside the blocks; the spectrum, Table 1 and sample-size tables are blocks now)
CHECKED_TABLES = (
    "| D | R² f(x)",
    "| data | μ̂",
    "| scores | used |",
    "| D | excess, inner |",
)
#: numbers allowed outside the blocks that are neither config nor paper values, and why
CONSTANTS = {
    2026: "the paper's year",
    2610.15388: "the paper's arXiv id",
    3.11: "Python version",
    22.05: "the SLURM version Debian installs in CI",
    0.88: "test threshold (both noise schemes)",
    0.04: "test threshold (both noise schemes)",
    3.16: "the 'same order of magnitude' tolerance 10^0.5 (verdicts.py)",
}
#: unit-bearing constants: test thresholds and verdict tolerances, the study's budget multipliers
UNIT_CONSTANTS = {"5 %", "10 %", "10%", "95 %", "99 %", "1×", "2×", "4×"}  # levels, test factors
UNIT_CONSTANTS |= {"20 %"}  # Experiment S3b's registered band (docs/smoothness.md)
NUMBER = re.compile(
    r"(?<![\w.~^/-])[-−]?\d[\d,]*(?:\.\d+)?(?:e[-+−]?\d+)?(?:\s?%|×|\s?s\b|\s?min\b)?(?![\w.]*\d)"
)


def _flatten(node) -> set[float]:
    if isinstance(node, dict):
        return set().union(*(_flatten(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_flatten(v) for v in node)) if node else set()
    if isinstance(node, bool) or not isinstance(node, int | float):
        return set()
    return {float(node)}


@pytest.fixture(scope="module")
def config():
    return readme.default_config()


@pytest.fixture(scope="module")
def paper():
    return load_paper_values(readme.PAPER)


def prose(text: str) -> list[str]:
    """README lines outside generated blocks, code fences and the checked tables."""
    text = readme.BLOCK.sub("", text)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out, skipping = [], False
    for line in text.splitlines():
        skipping = line.startswith(CHECKED_TABLES) or (skipping and line.startswith("|"))
        if not skipping:
            out.append(re.sub(r"`[^`]*`", "", line))  # code spans name keys and paths
    return out


def measured_looking(text: str, allowed: set[float]) -> list[str]:
    """Numbers outside the blocks that no allowed source explains."""
    flagged = []
    for line in prose(text):
        for token in NUMBER.findall(line):
            token = token.strip().rstrip(",")
            if token in UNIT_CONSTANTS:
                continue
            unit = re.search(r"(%|×|s|min)$", token)
            number = re.sub(r"\s?(%|×|s|min)$", "", token).replace(",", "").replace("−", "-")
            value = float(number)
            if not unit and value.is_integer() and abs(value) <= 100:
                continue  # small counts: dimensions, seeds, epochs, layer numbers
            if not unit and any(math.isclose(value, a, rel_tol=1e-9) for a in allowed):
                continue
            flagged.append(f"{token}  ← {line.strip()[:80]}")
    return flagged


@pytest.fixture(scope="module")
def allowed(config, paper):
    # the study's step budget epochs × ⌊n_train / batch⌋, and the ⌈…⌉ one the text contrasts
    t, n = config["train"], config["gmm"]["n_train"]
    budgets = {t["epochs"] * (n // t["batch_size"]), t["epochs"] * -(-n // t["batch_size"])}
    return (
        _flatten(config) | _flatten(paper) | {float(k) for k in CONSTANTS | dict.fromkeys(budgets)}
    )


def test_no_measured_number_outside_the_generated_blocks(allowed):
    """README and every docs page (but the history and the digit-checked derivation)."""
    docs = readme.documents()
    assert README in docs and len(docs) > 5
    for path in docs:
        assert measured_looking(path.read_text(), allowed) == [], path.name


def test_every_docs_page_is_linked_from_readme():
    text = README.read_text()
    for path in readme.documents()[1:]:
        assert f"docs/{path.name}" in text, f"README does not link docs/{path.name}"


def test_a_block_in_two_documents_is_an_error(tmp_path):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("<!-- BEGIN generated:x -->\n1\n<!-- END generated:x -->\n")
    b.write_text(a.read_text())
    with pytest.raises(ValueError, match=r"block x in .*a\.md and again in .*b\.md"):
        readme.all_blocks([a, b])
    b.write_text(a.read_text().replace(":x", ":y"))
    assert readme.all_blocks([a, b]) == {"x": "1\n", "y": "1\n"}


def test_the_scanner_flags_a_planted_measurement(allowed):
    planted = (
        README.read_text() + "\nThe run took 13 min 07 s; μ̂ = 0.8825, 79 % sampling, 8.8× paper.\n"
    )
    flagged = measured_looking(planted, allowed)
    assert [f.split("  ←")[0] for f in flagged] == ["13 min", "07 s", "0.8825", "79 %", "8.8×"]


def test_every_fragment_is_one_readme_block():
    text = "".join(path.read_text() for path in readme.documents())
    names = re.findall(r"^<!-- BEGIN generated:(\w+) -->$", text, re.M)
    assert sorted(names) == readme.fragment_names()
    assert len(names) == len(set(names))
    assert any(n.startswith("bench_") for n in names) and any(
        not n.startswith("bench_") for n in names
    )


def test_the_benchmark_blocks_equal_the_tracked_records(config, paper):
    blocks = readme.all_blocks()
    fragments = readme.render(None, config, paper)
    assert set(fragments) == {n for n in blocks if n.startswith("bench_")}
    for name, text in fragments.items():
        assert blocks[name] == text, (
            f"README block {name} is stale: python3 -m crl_approx.render.readme"
        )


def test_a_changed_record_changes_its_blocks(tmp_path, config, paper):
    for path in readme.RECORDS.glob("*.json"):
        shutil.copy(path, tmp_path)
    record = json.loads((tmp_path / "default_run.json").read_text())
    record["wall_s"] += 61
    record["rules"]["train_sample_size"]["job_s"] += 500
    (tmp_path / "default_run.json").write_text(json.dumps(record))
    new = readme.render(None, config, paper, records=tmp_path)
    old = readme.all_blocks()
    assert readme.minsec(record["wall_s"]) in new["bench_quickstart"]
    assert new["bench_quickstart"] != old["bench_quickstart"]
    assert new["bench_sample_size_cost"] != old["bench_sample_size_cost"]
    assert new["bench_gpu"] == old["bench_gpu"]  # reads another record


def _design(design, share, decided, rule="unresolved", rule_2x=None):
    """One design of a crafted benchmarks/widths_design.json (what the block reads)."""
    worlds = [
        {"world": w, "floor": 0.01, "drop_share": 0.3, "read_limit": 0.03, "eps_read": 2}
        | {"eps_ladder": 5, "dim_eps_read": 2}
        for w in ("lcgm", "lcgm_d64")
    ]
    verdicts = [
        {"prediction": p, "verdict": "holds" if p in decided else "unresolved", "rule": rule}
        | {"rule_2x": rule_2x}
        for p in ("W1", "W2", "W4", "W5", "W6", "W3", "W7")
    ]
    return {"design": design, "w_cpu_s": 1000 * share, "w_share": share, "worlds": worlds} | {
        "verdicts": verdicts,
        "decided": decided,
    }


def test_the_design_block_says_which_designs_fit_the_cap_and_what_each_decides(
    tmp_path, config, paper
):
    """Experiment W's designs (issue 36): a design at or under the cap is listed as within it,
    one above it as over it, each with the LCGM predictions it decides (the mixture's W3 and W7
    do not read the LCGM's design and are left out); moving one design over the cap moves it."""
    for path in readme.RECORDS.glob("*.json"):
        shutil.copy(path, tmp_path)
    record = {"commit": "0123456789", "date": "2026-12-06", "base": "widest:1500", "cap": 0.1}
    record["designs"] = [
        _design("widest:1500", 0.086, ["W3"], rule="fails"),
        _design("sweeps:500", 0.1, ["W2", "W3"], rule_2x="holds"),
        _design("sweeps:1500", 0.167, ["W3", "W5", "W6"], rule_2x="fails"),
    ]
    (tmp_path / "widths_design.json").write_text(json.dumps(record))
    text = readme.render(None, config, paper, records=tmp_path)["bench_widths_design"]
    flat = " ".join(text.split())
    assert (
        "Within the cap (10 % of the run's job CPU): `widest:1500` decides no LCGM prediction; "
        "`sweeps:500` decides W2." in flat
    )
    assert "Over it: `sweeps:1500` (16.7 %) decides W5, W6." in flat
    assert "| `widest:1500` (default) | 86 s, 8.6 % |" in flat
    assert "unresolved (rule: fails)" in flat and "; at 2×: holds" in flat
    record["designs"][1]["w_share"] = 0.101
    (tmp_path / "widths_design.json").write_text(json.dumps(record))
    text = readme.render(None, config, paper, records=tmp_path)["bench_widths_design"]
    flat = " ".join(text.split())
    within = "Within the cap (10 % of the run's job CPU): `widest:1500` decides no LCGM prediction."
    assert within in flat
    assert "Over it: `sweeps:500` (10.1 %) decides W2; `sweeps:1500` (16.7 %)" in flat


def test_fill_replaces_only_the_named_block():
    text = "a\n<!-- BEGIN generated:x -->\nold\n<!-- END generated:x -->\nb 0.123\n"
    assert readme.fill(text, {"x": "new\n", "y": "z\n"}) == text.replace("old", "new")
    assert readme.blocks(text) == {"x": "old\n"}


def test_number_formats():
    assert (
        readme.g(2625, 2) == "2600"
        and readme.g(0.8668, 3) == "0.867"
        and readme.g(8.76, 2) == "8.8"
    )
    assert readme.e(1.6449e-4) == "1.64e-4" and readme.e(-2.5e-3, 2) == "−2.5e-3"
    assert readme.f(-0.42974, 4) == "−0.4297"
    assert readme.span([0.7921, 0.9964], readme.pnum, " %") == "79–100 %"
    assert readme.span([31.2, 31.4], readme.g, " s", sig=2) == "31 s"
    assert readme.minsec(787.4) == "13 min 07 s"
    assert readme.protocol("n=1000000") == "n = 10⁶" and readme.protocol("n=4096") == "n = 4,096"
    assert readme.protocol("fresh") == "the fresh stream"


def test_reflow_wraps_prose_and_keeps_tables():
    long = "- " + " ".join(["word"] * 60) + "\n| a | b |\n| --- | --- |\n" + "x " * 80
    out = readme.reflow(long, width=40).splitlines()
    assert all(len(line) <= 40 for line in out if not line.startswith("|"))
    assert "| a | b |" in out and "| --- | --- |" in out
    assert out[1].startswith("  word")  # a list item's continuation is indented


def test_job_times_sums_the_benchmark_files(tmp_path):
    header = "s\th:m:s\tmax_rss\n"
    for rel, s in {"train/a/dim~1.tsv": 3.5, "train/a/dim~2.tsv": 7.25, "plot/x.tsv": 1.0}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(header + f"{s}\t0:00:0{int(s)}\t10\n")
    times = runrecord.job_times(tmp_path)
    assert times["train"]["jobs"] == 2 and times["train"]["job_s"] == 10.75
    assert times["train"]["longest"] == "train/a/dim~2" and times["plot"]["job_s"] == 1.0


def test_the_template_reads_every_number_it_prints():
    """No digit in the template's literal text except structural ones (D values, the t values it
    reads the curve at, the probe threshold 0.9999 that design.json names)."""
    text = (REPO / "report" / "templates" / "readme.md.j2").read_text()
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
    numbers = {float(n) for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?", literal)}
    assert numbers <= {0, 1, 2, 3, 4, 8, 10, 0.9999, 1e-2, 1e-3, 1e-1, 1e-5, 512, 400}, numbers


def _deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _deep_merge(base[key], value)
            if isinstance(value, dict) and isinstance(base.get(key), dict)
            else value
        )
    return out


def test_the_readme_recipes_are_valid_configs():
    """Each YAML snippet of "Try your own assumption", merged over config/config.yaml as
    --configfile merges it, passes the schema and the cross-key checks; a misspelt key in a
    recipe would fail."""
    import yaml

    from crl_approx.config import ConfigError, load_schema, validate_config

    section = README.read_text().split("## Try your own assumption")[1].split("\n## ")[0]
    recipes = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(recipes) == 3
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    schema = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    for recipe in recipes:
        validate_config(_deep_merge(base, yaml.safe_load(recipe)), schema)
    broken = yaml.safe_load(recipes[0]) | {"gmm": {"mu_z": 1.0}}
    with pytest.raises(ConfigError, match="mu_z"):
        validate_config(_deep_merge(base, broken), schema)


def test_the_rank_floor_block_does_not_depend_on_the_machine(config, paper):
    """Two machines with bitwise-equal tables took 1079 and 1035 L-BFGS iterations (and stop at
    different gradients): the block the default tier compares across machines must read the same."""
    import types

    import pandas as pd

    def text(iterations, grad):
        floor = pd.DataFrame(
            {
                "D": [8],
                "rank_d_floor_excess_risk": [6.28e-8],
                "lbfgs_iterations": [iterations],
                "max_abs_grad": [grad],
            }
        ).set_index("D")
        run = types.SimpleNamespace(rank_floor=floor)
        module = (
            readme.environment()
            .get_template(readme.TEMPLATE.name)
            .make_module({"run": run, "config": config, "paper": paper})
        )
        return str(module.rank_floor_notes())

    here, there = text(1079, 3.0e-9), text(1035, 5.1e-9)
    assert here == there and "6.28e-8" in here and "1e-7" in here
    assert "1079" not in here
