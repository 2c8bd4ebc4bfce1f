"""The device copy as the yardstick of chapter 4's live tables: a record by name, its share.

``bench patterns`` (:mod:`demos.patterns.bench`) and ``bench scan``
(:mod:`demos.patterns.scan_bench`) keep one list of records per part of a run
(histograms, sums, scans, stencils), each with its name, its time and its rate
as a fraction of the device copy's rate measured in the same run. Their live
tables look a record up by name and show that fraction as a share in percent:
both are written here once, so that every table finds a record and words and
computes its "share of the copy's rate" row alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from demos.live import Row

#: A row's label after the record's name.
SHARE_LABEL = "share of the copy's rate"


def find(records: list[dict[str, Any]], name: str, input_: str | None = None) -> dict[str, Any]:
    """The record called *name* (and, if given, measured on *input_*); KeyError when missing,
    which a live table's row shows as "-"."""
    for record in records:
        if record["name"] == name and (input_ is None or record.get("input") == input_):
            return record
    raise KeyError(name)


def copy_share_rows(part: str, names: Iterable[str], fraction: str) -> tuple[Row, ...]:
    """One row per name: the record's *fraction* of the copy's rate (its key in the record:
    ``fraction_of_copy``, or ``bench patterns``' ``fraction_of_copy_bandwidth``) in percent,
    from the list *part* of a result."""
    return tuple(
        Row(
            f"{name}, {SHARE_LABEL}",
            lambda result, name=name: 100 * find(result[part], name)[fraction],
            "%",
            0,
        )
        for name in names
    )
