"""Atomic writes: a failure leaves neither the output nor a temporary file behind."""

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
