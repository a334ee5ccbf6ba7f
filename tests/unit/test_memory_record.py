"""Each rule's peak memory against its mem_mb: records.memory on a record made for the test, and
the committed default run's record (benchmarks/default_run.json), whose jobs logged their peaks."""

import json
from pathlib import Path

import pytest

from crl_approx.render import records

REPO = Path(__file__).resolve().parents[2]


def rule(peak, mem_mb, jobs=1, name="x/a", over=0):
    return {"jobs": jobs, "peak_mib": peak, "peak_job": name, "mem_mb": mem_mb, "over_jobs": over}


def test_rules_are_ordered_by_their_share_of_the_request_and_a_rule_above_it_is_named():
    record = {
        "rules": {
            "small": rule(100.0, 1000),
            "close": rule(900.0, 1000),
            "big": rule(3000.0, 16000, jobs=4, name="big/b"),
            "over": rule(600.0, 500),
            "one_job_over": rule(100.0, 1000, jobs=3, over=1),  # not its largest peak's job
            "unasked": rule(50.0, None),
            "old": {"jobs": 2},  # a log from before the memory line
        }
    }
    m = records.memory(record, top=3)
    assert [row["rule"] for row in m["top"]] == ["over", "close", "big"]
    assert m["top"][0]["share"] == pytest.approx(1.2)
    assert [row["rule"] for row in m["above"]] == ["over", "one_job_over"]
    assert m["unrequested"] == ["unasked"]  # no request is not "above" it
    assert m["largest"]["rule"] == "big" and m["largest"]["peak_job"] == "big/b"
    assert m["rules"] == 6 and m["unrecorded"] == ["old"]
    assert records.memory({"rules": {"old": {"jobs": 1}}}) is None


def test_the_default_run_kept_every_rule_below_its_request():
    record = json.loads((REPO / "benchmarks" / "default_run.json").read_text())
    m = records.memory(record)
    assert m is not None, "the default run's record has no peak memory: rerun default_run.py"
    assert m["unrecorded"] == [], m["unrecorded"]  # every job logs its peak
    assert m["unrequested"] == [], m["unrequested"]  # every rule declares mem_mb
    assert m["above"] == [], m["above"]
    # the smoothness spectrum's grids alone are ~86 MB each: a recorded peak, not a placeholder
    assert m["largest"]["peak_mib"] > 500
