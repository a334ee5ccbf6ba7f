"""What README prints of the benchmark records (crl_approx.render.records), on crafted records whose
answers are worked out by hand here, not by the module."""

import math

import pytest

from crl_approx.render import records

STUDY = "train_sample_size"
RECORD = {
    "wall_s": 1000.0,
    "rules": {
        STUDY: {
            "per_job": {
                f"{STUDY}/score~inner/pool~fresh/budget~1x/lr~0.001/dim~2": 10.0,
                f"{STUDY}/score~inner/pool~fresh/budget~2x/lr~0.001/dim~2": 20.0,
                f"{STUDY}/score~inner/pool~fresh/budget~4x/lr~0.001/dim~2": 40.0,
                f"{STUDY}/score~inner/pool~fresh/budget~1x/lr~0.003/dim~2": 12.0,
                f"{STUDY}/score~inner/pool~1024/budget~1x/lr~0.0003/dim~8": 15.0,
            },
            "jobs": 5,
            "job_s": 97.0,
            "longest": f"{STUDY}/score~inner/pool~fresh/budget~4x/lr~0.001/dim~2",
            "startup_cpu_s": 5.0,
        },
        "make_pool": {
            "per_job": {"make_pool/n~1024": 3.0},
            "jobs": 1,
            "job_s": 3.0,
            "startup_cpu_s": 0.5,
        },
        "train_encoder": {
            "per_job": {"train_encoder/lcgm/dim~8": 30.0, "train_encoder/gmm/dim~2": 25.0},
            "jobs": 2,
            "job_s": 55.0,
            "longest": "train_encoder/lcgm/dim~8",
            "startup_cpu_s": 2.5,
        },
        "assemble_table1": {
            "per_job": {"assemble_table1/t": 1.5},
            "jobs": 1,
            "job_s": 1.5,
            "startup_cpu_s": 0.25,
        },
        "plot_excess": {
            "per_job": {"plot_excess/f": 4.0},
            "jobs": 1,
            "job_s": 4.0,
            "startup_cpu_s": 0.25,
        },
    },
}
# the study's other rules (README's study time sums all four)
RECORD["rules"] |= {
    "assemble_sample_size": {
        "per_job": {"assemble_sample_size/t": 1.0},
        "jobs": 1,
        "job_s": 1.0,
        "startup_cpu_s": 0.5,
    },
    "plot_sample_size": {
        "per_job": {"plot_sample_size/f": 2.0},
        "jobs": 1,
        "job_s": 2.0,
        "startup_cpu_s": 1.0,
    },
}


def test_the_quick_start_totals():
    q = records.quickstart(RECORD)
    assert q["total_s"] == pytest.approx(97 + 3 + 55 + 1.5 + 4 + 1 + 2)
    assert q["study_s"] == pytest.approx(97 + 3 + 1 + 2)
    assert q["without_study_s"] == pytest.approx(55 + 1.5 + 4)
    assert q["axis_s"] == pytest.approx(20 + 40)  # fresh at 2x and 4x
    assert q["other_lrs_s"] == pytest.approx(12 + 15)  # every lr but 0.001
    assert q["saves_s"] == pytest.approx(60 + 27)
    assert q["startup_cpu_s"] == pytest.approx(5 + 0.5 + 2.5 + 0.25 + 0.25 + 0.5 + 1)
    assert q["over_goal"] and not records.quickstart(RECORD, goal_s=1100)["over_goal"]


def test_the_flop_floor_of_a_run():
    # two training rules counted 4e12 and 2e12 FLOP of steps and validation; at 50 GFLOP/s that is
    # 120 s of work, which took 300 s of CPU (2.5x); the run took 600 s on 2 cores, so at the
    # limit it saves (300 - 120) / 2 = 90 s of wall time, at 1.5x the limit (300 - 180) / 2 = 60 s;
    # without the 300 s the run takes 600 - 150 = 450 s: train_a's 15 s outside its counted parts
    # and the probe's 50 s, and 40 s of job time beyond the jobs' own 365 s of CPU
    record = {
        "cores": 2,
        "peak_gflops": 50.0,
        "wall_s": 600.0,
        "job_s": 405.0,
        "job_cpu_s": 365.0,
        "rules": {
            "train_a": {
                "cpu_s": 215.0,
                "flop": {"steps": 3e12, "validation": 1e12},
                "flop_cpu_s": 200.0,
                "phase_cpu_s": {"steps": 180.0, "validation": 20.0, "evaluation": 9.0},
            },
            "train_b": {
                "flop": {"steps": 2e12},
                "flop_cpu_s": 100.0,
                "phase_cpu_s": {"steps": 100},
            },
            "probe": {"cpu_s": 50.0},
        },
    }
    f = records.flop_floor(record)
    assert f["tflop"] == pytest.approx(6.0)
    assert f["limit_s"] == pytest.approx(120.0)
    assert f["cpu_s"] == pytest.approx(300.0) and f["ratio"] == pytest.approx(2.5)
    assert f["at_limit_s"] == pytest.approx(600 - 90)
    assert f["at_bar_s"] == pytest.approx(600 - 60)
    assert f["alone_s"] == pytest.approx(120 / 2)
    assert f["rest_s"] == pytest.approx(450) and f["at_limit_s"] == pytest.approx(450 + 60)
    assert f["outside_cpu_s"] == pytest.approx(65) and f["off_cpu_s"] == pytest.approx(40)
    # 2 cores for 600 s, 405 s of it held by jobs: 795 core-seconds no job held; the three parts
    # over the cores are the run apart from its training's CPU
    assert f["idle_s"] == pytest.approx(795)
    assert (f["outside_cpu_s"] + f["off_cpu_s"] + f["idle_s"]) / 2 == pytest.approx(f["rest_s"])
    assert [(o["rule"], o["cpu_s"]) for o in f["outside"]] == [
        ("probe", 50),
        ("train_a", 15),
        ("train_b", 0),
    ]
    assert records.flop_floor(RECORD) is None  # a record without the counts
    # a training rule that ran steps without counting them (an old log) is refused, by name
    partial = {**record, "rules": {**record["rules"], "train_c": {"phase_cpu_s": {"steps": 5.0}}}}
    with pytest.raises(ValueError, match="train_c"):
        records.flop_floor(partial)
    mixed = {**record, "rules": {**record["rules"], "train_a": {**record["rules"]["train_a"]}}}
    mixed["rules"]["train_a"]["uncounted_jobs"] = 1
    with pytest.raises(ValueError, match="train_a"):
        records.flop_floor(mixed)


def test_the_study_cost_names_its_longest_cell():
    c = records.study_cost(RECORD)
    assert (c["jobs"], c["longest_s"], c["train_s"]) == (5, 40.0, 97.0)
    assert c["longest_cell"] == "pool~fresh, budget~4x, lr~0.001, dim~2"


def test_the_rule_table_lists_the_training_rules_and_sums_the_rest():
    # the default rules: those absent from the record are an error (README lists every one)
    with pytest.raises(KeyError):
        records.rule_rows(RECORD)
    record = {"rules": {r: RECORD["rules"][STUDY] for r in records.BIG_RULES}}
    record["rules"]["plot_excess"] = RECORD["rules"]["plot_excess"]
    assert [r["rule"] for r in records.rule_rows(record)["rows"]] == list(records.BIG_RULES)


def test_the_rule_table_lists_the_named_rules_and_sums_the_rest():
    t = records.rule_rows(RECORD, big=(STUDY, "train_encoder"))
    assert [r["rule"] for r in t["rows"]] == [STUDY, "train_encoder"]
    assert t["rows"][1] == {
        "rule": "train_encoder",
        "jobs": 2,
        "job_s": 55.0,
        "longest_s": 30.0,
        "longest_cell": "lcgm/dim~8",
    }
    other = t["other"]
    assert (other["rules"], other["jobs"]) == (5, 5)
    assert other["job_s"] == pytest.approx(3 + 1.5 + 4 + 1 + 2)
    assert (other["longest"], other["longest_s"]) == ("plot_excess", 4.0)
    assert t["total_s"] == pytest.approx(163.5)


def test_job_lookups_match_their_patterns():
    assert records.jobs_s(RECORD, "train_encoder", "lcgm/*") == 30.0
    assert records.jobs_s(RECORD, STUDY, "*budget~1x*") == pytest.approx(37.0)
    assert records.jobs(RECORD, "no_such_rule") == []
    assert records.job_s(RECORD, "make_pool", "train_encoder") == 58.0
    assert records.job_s(RECORD, "make_pool", "train_widths", recorded_only=True) == 3.0
    with pytest.raises(KeyError):
        records.job_s(RECORD, "train_widths")


def test_the_digits_budget_counts_and_ratio():
    cell = {"moved": False, "resolved": True, "within_tolerance": True}
    record = {
        "runs": {
            "B": {"job_times": {"train_digits": {"job_s": 100.0}, "make_digits": {"job_s": 5.0}}},
            "2B": {"job_times": {"train_digits": {"job_s": 190.0}, "make_digits": {"job_s": 5.0}}},
        },
        "cells": [
            cell,
            cell | {"resolved": False},
            cell | {"moved": True, "within_tolerance": False},
        ],
    }
    d = records.digits_budget(record)
    assert d["ratio"] == pytest.approx(1.9) and d["all_B_s"] == 105.0
    assert (d["cells"], d["moved"], d["resolved"], d["beyond_tolerance"]) == (3, 1, 2, 1)


def test_a_rules_share_of_the_runs_cpu_time():
    """Experiment W's share of the run (the README's cost of the width sweep): the named rules'
    own CPU time over every job's, their job count and job time; a rule the run did not have
    counts as none. Known answers: (30 + 2) / 100, 3 + 1 jobs, 40 + 3 s."""
    rules = {
        "train_widths": {"cpu_s": 30.0, "jobs": 3, "job_s": 40.0},
        "assemble_widths": {"cpu_s": 2.0, "jobs": 1, "job_s": 3.0},
        "train_encoder": {"cpu_s": 68.0, "jobs": 2, "job_s": 80.0},
    }
    s = records.share(rules, "train_widths", "assemble_widths", "plot_widths")
    assert s == {
        "cpu_s": 32.0,
        "total_cpu_s": 100.0,
        "share": pytest.approx(0.32),
        "jobs": 4,
        "job_s": 43.0,
    }
    assert math.isnan(records.share({}, "train_widths")["share"])


def test_run_ab_reads_the_spread_against_the_difference():
    """Two sides' runs: the jobs' CPU ranges 100–120 s (base) and 150–151 s (head), so a +40.5 s
    difference of medians beats a 20 s spread; the time beyond the jobs' CPU (60, 70 against 30,
    35) separates the sides. A head faster than the base reads as resolved too (the sign kept);
    a head whose own range is the larger sets the spread; a difference at most the spread, or a
    head run's time beyond reaching a base run's, turns each reading; one run a side is refused."""
    from crl_approx.render.records import run_ab

    def record(base, head):
        runs = {
            side: [{"job_cpu_s": c, "job_s": c + extra, "wall_s": w} for c, extra, w in trip]
            for side, trip in (("base", base), ("head", head))
        }
        median = {
            side: {k: sum(r[k] for r in rs) / len(rs) for k in ("job_cpu_s", "wall_s")}
            for side, rs in runs.items()
        }
        return {"runs": runs, "median": median}

    n = run_ab(record([(100, 60, 90), (120, 70, 100)], [(150, 30, 80), (151, 35, 81)]))
    cpu, wall = n["job_cpu_s"], n["wall_s"]
    assert cpu["spread"] == 20 and cpu["diff"] == 40.5 and cpu["resolved"]
    assert wall["spread"] == 10 and wall["diff"] == -14.5 and wall["resolved"]
    assert n["separated"] and n["beyond"] == {"base": [60, 70], "head": [30, 35]}
    assert n["beyond_order"] == "below"
    slower = run_ab(record([(100, 30, 90), (120, 35, 90)], [(100, 60, 90), (120, 70, 90)]))
    assert slower["beyond_order"] == "above" and not slower["separated"]
    # the head faster by 40 s with a 30 s range of its own: the head's range is the spread
    n = run_ab(record([(150, 60, 90), (151, 70, 90)], [(95, 30, 90), (125, 60, 90)]))
    assert n["job_cpu_s"]["spread"] == 30 and n["job_cpu_s"]["diff"] == -40.5
    assert n["job_cpu_s"]["resolved"] and not n["wall_s"]["resolved"]
    assert not n["separated"]  # a head run's 60 s reaches the base's least
    assert n["beyond_order"] == "overlap"
    # a difference equal to the spread is not resolved
    n = run_ab(record([(100, 60, 90), (120, 70, 90)], [(120, 30, 90), (140, 35, 90)]))
    assert n["job_cpu_s"]["diff"] == n["job_cpu_s"]["spread"] == 20
    assert not n["job_cpu_s"]["resolved"]
    with pytest.raises(ValueError, match="one run a side"):
        run_ab(record([(100, 60, 90)], [(150, 30, 80)]))
