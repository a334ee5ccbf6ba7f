"""benchmarks/flop_limit.py's summary of a cell's repeated runs: the row is the median run by
job / limit (an actual run, its own fields together), with the range of both ratios."""

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import flop_limit


def run(job, steps, cpu):
    return {
        "cell": "c",
        "peaks_gflops": [90.0, 92.0],
        "limit_s": 10.0,
        "job_cpu_s": cpu,
        "job_over_limit": job,
        "steps_over_limit": steps,
        "phase_cpu_s": {"steps": cpu - 1},
    }


def test_a_cells_row_is_its_median_run_with_the_ranges_of_its_ratios():
    runs = [run(1.9, 1.7, 19.0), run(1.6, 1.8, 16.0), run(1.7, 1.5, 17.0)]
    row = flop_limit.summary(runs)
    # the median by job / limit, every field of that one run (not a mix of runs)
    assert (row["job_over_limit"], row["steps_over_limit"], row["job_cpu_s"]) == (1.7, 1.5, 17.0)
    assert row["job_over_limit_range"] == [1.6, 1.9]
    assert row["steps_over_limit_range"] == [1.5, 1.8]
    assert [r["job_cpu_s"] for r in row["runs"]] == [19.0, 16.0, 17.0]  # in the order run
    assert "phase_cpu_s" not in row["runs"][0]


def test_an_even_count_takes_the_lower_middle_run_and_one_run_is_itself():
    row = flop_limit.summary([run(2.0, 1.9, 20.0), run(1.5, 1.4, 15.0)])
    assert row["job_over_limit"] == 1.5 and row["job_over_limit_range"] == [1.5, 2.0]
    one = flop_limit.summary([run(1.8, 1.6, 18.0)])
    assert one["job_over_limit_range"] == [1.8, 1.8] and one["job_cpu_s"] == 18.0
