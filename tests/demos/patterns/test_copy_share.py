"""demos.patterns.copy_share: the one record lookup and share-of-the-copy row of chapter 4's
live tables (bench patterns and bench scan)."""

from __future__ import annotations

import pytest

from demos.patterns import bench, copy_share, scan_bench

RESULT = {
    "scan": [
        {"name": "mine", "ms": 2.0, "fraction_of_copy": 0.5},
        {"name": "library", "ms": 1.0, "fraction_of_copy": 0.96},
    ],
    "histogram": [
        {"name": "shared", "input": "uniform", "fraction_of_copy_bandwidth": 0.25},
        {"name": "shared", "input": "skewed", "fraction_of_copy_bandwidth": 0.75},
    ],
}


def test_find_takes_the_named_record_on_the_named_input() -> None:
    assert copy_share.find(RESULT["scan"], "library")["ms"] == 1.0
    assert copy_share.find(RESULT["histogram"], "shared", "skewed")["input"] == "skewed"
    assert copy_share.find(RESULT["histogram"], "shared")["input"] == "uniform"  # the first
    with pytest.raises(KeyError):
        copy_share.find(RESULT["scan"], "missing")


def test_a_share_row_is_the_fraction_in_percent_and_blank_when_missing() -> None:
    rows = copy_share.copy_share_rows("scan", ("mine", "library", "missing"), "fraction_of_copy")
    assert [row.label for row in rows] == [
        f"{name}, share of the copy's rate" for name in ("mine", "library", "missing")
    ]
    assert [row.value(RESULT) for row in rows] == [50.0, 96.0, None]
    assert rows[0].format(rows[0].value(RESULT)) == "50 %"


def test_both_benchmarks_word_their_share_rows_alike() -> None:
    tables = (bench.REDUCTION_TABLE, scan_bench.SCAN_TABLE, scan_bench.STENCIL_TABLE)
    labels = [row.label for table in tables for row in table.rows]
    shares = [label for label in labels if "copy" in label and "device copy" not in label]
    assert len(shares) == len(bench.REDUCTIONS) + 2 + len(scan_bench.STENCIL_NAMES)
    assert all(label.endswith(f", {copy_share.SHARE_LABEL}") for label in shares)
