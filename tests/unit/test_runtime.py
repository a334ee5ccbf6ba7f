"""Atomic writes: a failure leaves neither the output nor a temporary file behind, and a result
gets the mode a plain open(…, "w") gives under the process umask."""

import os
import stat

import pandas as pd
import pytest

from crl_approx.runtime import atomic_path, write_csv


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a table")
        raise RuntimeError("killed")
    assert not target.exists()
    assert list((tmp_path / "sub").iterdir()) == []


def test_successful_write_replaces_atomically_with_full_precision(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    value = 0.1 + 0.2
    write_csv(pd.DataFrame({"v": [value]}), target)
    assert pd.read_csv(target)["v"][0] == value
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_results_get_the_mode_a_plain_open_gives_under_the_umask(tmp_path, mask):
    """mkstemp's 0600 must not leak into results: under umask 022 a table is world-readable
    (0644), under 077 private (0600), under 002 group-writable (0664) — each the mode of a file
    written by open(…, "w") beside it, and the mode of an overwritten result too."""
    old = os.umask(mask)
    try:
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
        target = tmp_path / "out.csv"
        write_csv(pd.DataFrame({"v": [1.0]}), target)
        first = stat.S_IMODE(target.stat().st_mode)
        write_csv(pd.DataFrame({"v": [2.0]}), target)  # an overwrite keeps the umask's mode
        again = stat.S_IMODE(target.stat().st_mode)
    finally:
        os.umask(old)
    assert first == again == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~mask
