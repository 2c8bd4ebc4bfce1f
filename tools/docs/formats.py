"""How the docs write a measured number: the filters the page templates use.

One function per way of writing a figure, so that every table of a kind rounds
alike and a re-measured result changes only its digits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, no exponent, no trailing zeros."""
    text = f"{value:.{digits}g}"
    if "e" in text:
        text = f"{float(text):f}".rstrip("0").rstrip(".")
    return text


def duration(seconds: float, digits: int = 3) -> str:
    """A time in the unit that keeps it between 1 and 1000: ``22 us``, ``8.13 ms``, ``5.97 s``."""
    for scale, unit in ((1e-6, "us"), (1e-3, "ms")):
        if seconds < scale * 999.5:
            return f"{sig(seconds / scale, digits)} {unit}"
    return f"{sig(seconds, digits)} s"


def grouped(value: float, decimals: int = 0) -> str:
    """Thousands separated by commas: ``67,108,864``, ``4,154,685``, ``3,678``."""
    return f"{value:,.{decimals}f}"


def micros(value: float) -> str:
    """Microseconds as the per-operation table writes them: a decimal below 100, grouped."""
    return grouped(value, 1 if value < 100 else 0)


def percent(fraction: float, decimals: int = 0) -> str:
    """A fraction as a percentage without its sign: ``0.655`` -> ``66``."""
    return f"{100 * fraction:.{decimals}f}"


def copy_share(record: Mapping[str, Any], decimals: int = 0) -> str:
    """A kernel's rate as a share of the device copy's rate measured in the same run: ``66 %``.

    Every benchmark table's "share of the copy's rate" is written by this one filter. The
    records hold the fraction as ``fraction_of_copy`` (``bench patterns``:
    ``fraction_of_copy_bandwidth``).
    """
    key = "fraction_of_copy" if "fraction_of_copy" in record else "fraction_of_copy_bandwidth"
    return f"{percent(record[key], decimals)} %"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; every cell is written with ``str``."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


FILTERS = {
    "sig": sig,
    "duration": duration,
    "grouped": grouped,
    "micros": micros,
    "percent": percent,
    "copy_share": copy_share,
}
