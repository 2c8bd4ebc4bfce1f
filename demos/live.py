"""Live beside reference: every measurement a chapter shows, on this machine's GPU and on the H200.

A chapter cell that measures something calls :func:`side_by_side` with the
rows to show, a function that measures them here, and the shipped reference
(:func:`reference`). On a machine with a GPU the function runs and its figures
are printed next to the reference's, the GPU named in the header, and the
lesson's expected direction (:class:`Expect`) is checked on the live numbers:
a result that contradicts the lesson is said so, with the reason, instead of
being printed silently. Without a GPU (a laptop, CI) nothing is measured and the
reference is printed alone, labelled as such. Prose never quotes a live number:
only the code cells print them.

When the environment variable ``DEMOS_LIVE_LOG`` names a file, every table is
also appended to it as one JSON line (the GPU-node notebook tool collects
them for the benchmarks page, docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from demos import hardware, shipped_results

__all__ = [
    "Expect",
    "Reference",
    "Row",
    "Table",
    "gpu_name",
    "live_possible",
    "reference",
    "side_by_side",
]

LOG_ENV = "DEMOS_LIVE_LOG"
#: What a measurement needs: CuPy on a GPU, numba-cuda on a GPU (not the simulator),
#: both, or nothing (it runs on the CPU, everywhere).
NEEDS = ("cupy", "numba", "gpu", "cpu")


@dataclass(frozen=True)
class Reference:
    """Part of a shipped result file, and where and when it was measured."""

    values: dict[str, Any]
    machine: str  # "NVIDIA H200" or "a machine without a GPU"
    date: str  # "2026-11-22"
    source: str  # "demos/results/lessons.json"


@dataclass(frozen=True)
class Row:
    """One line of a table: a label and where its value is in a result (a dotted path or a
    function)."""

    label: str
    key: str | Callable[[dict[str, Any]], Any]
    unit: str = "ms"
    digits: int = 3

    def value(self, result: dict[str, Any] | None) -> Any:
        if result is None:
            return None
        if callable(self.key):
            try:
                return self.key(result)
            except (KeyError, IndexError, TypeError, ZeroDivisionError):
                return None
        value: Any = result
        for part in self.key.split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def format(self, value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, str):
            return value
        if self.digits == 0:
            text = f"{value:,.0f}"
        else:
            text = f"{value:.{self.digits}f}"
        return f"{text} {self.unit}".rstrip()


@dataclass(frozen=True)
class Expect:
    """The direction a lesson predicts, checked on the live result.

    *holds* gets the live result and returns whether the lesson shows, or None
    when the live result cannot tell (one GPU for a scaling lesson); *claim* says
    what the lesson predicts, and *otherwise* why a GPU may not show it at this
    size (printed when it does not).
    """

    claim: str
    holds: Callable[[dict[str, Any]], bool | None]
    otherwise: str


@dataclass(frozen=True)
class Table:
    """What a measurement cell shows: a title, its rows, and the direction the lesson predicts."""

    title: str
    rows: tuple[Row, ...]
    expect: Expect | None = None


def gpu_name() -> str:
    """The name of GPU 0, or "no GPU"."""
    found = hardware.gpus()
    return found[0].name if found else "no GPU"


def live_possible(need: str = "cupy") -> bool:
    """Whether a measurement that needs *need* (one of :data:`NEEDS`) can run on this machine."""
    if need not in NEEDS:
        raise ValueError(f"need must be one of {NEEDS}, not {need!r}")
    if need == "cpu":
        return True
    real_numba = hardware.has_gpu() and not hardware.simulator_enabled()
    if need == "numba":
        return real_numba
    if need == "cupy":
        return hardware.cupy_available()
    return real_numba and hardware.cupy_available()


def _machine(environment: dict[str, Any]) -> str:
    """The GPUs a reference ran on ("NVIDIA H200", "4 x NVIDIA H200"), or its CPU."""
    names = [g["name"] for g in environment.get("gpus") or []]
    if not names:
        return f"a machine without a GPU ({environment.get('processor', 'CPU')})"
    return names[0] if len(names) == 1 else f"{len(names)} x {names[0]}"


def reference(file: str, *keys: str) -> Reference | None:
    """``demos/results/<file>`` descended into *keys*, or None when missing or skipped there.

    ``reference("lessons.json", "results", "divergence")`` is the divergence
    lesson of the reference run. A part recorded as skipped counts as missing.
    """
    data = shipped_results.load(file)
    if data is None:
        return None
    values: Any = data
    for key in keys:
        if not isinstance(values, dict) or key not in values:
            return None
        values = values[key]
    if not isinstance(values, dict) or "skipped" in values:
        return None
    environment = data.get("environment", {})
    return Reference(
        values=values,
        machine=_machine(environment),
        date=str(environment.get("date", ""))[:10],
        source=f"demos/results/{file}",
    )


def reference_or_explain(file: str, make: str, *keys: str) -> Reference | None:
    """:func:`reference`, or None after telling the student that it is not measured yet and how
    to make it (*make*: the command), so a table without its reference says why."""
    found = reference(file, *keys)
    if found is None:
        print(
            f"The reference for this table (demos/results/{file}) has not been "
            f"measured yet. To make it on a GPU node: {make}."
        )
    return found


def _measure(measure: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any] | None, str, float]:
    """(result, error in words or "", seconds); a failing measurement never stops the chapter."""
    start = time.perf_counter()
    try:
        result = measure()
    except Exception as exc:  # noqa: BLE001  (say what failed in one line; the reference follows)
        first = (str(exc).strip().splitlines() or ["(no message)"])[0][:200]
        return None, f"{type(exc).__name__}: {first}", time.perf_counter() - start
    return result, "", time.perf_counter() - start


def _table(rows: list[Row], columns: list[tuple[str, dict[str, Any] | None]]) -> list[str]:
    width = max(len(r.label) for r in rows) + 2
    cells = [[r.format(r.value(values)) for _, values in columns] for r in rows]
    widths = [
        max(len(header), *(len(line[k]) for line in cells)) + 3
        for k, (header, _) in enumerate(columns)
    ]
    lines = [" " * width + "".join(h.ljust(w) for (h, _), w in zip(columns, widths))]
    for row, line in zip(rows, cells):
        lines.append(row.label.ljust(width) + "".join(c.ljust(w) for c, w in zip(line, widths)))
    return [line.rstrip() for line in lines]


def side_by_side(
    table: Table,
    ref: Reference | None,
    measure: Callable[[], dict[str, Any] | None] | None = None,
    *,
    need: str = "cupy",
    no_live: str | None = None,
) -> dict[str, Any] | None:
    """Print *table* measured here (when *need* is met) beside the reference; return the live
    result.

    *measure* times the rows on this machine (it may return None: nothing
    measured); *no_live* is the reason a measurement has no live path on any
    machine (printed instead of measuring). Returns the live result, or None.
    """
    title, rows, expect = table.title, list(table.rows), table.expect
    live, error, seconds = None, "", 0.0
    can = measure is not None and no_live is None and live_possible(need)
    if can:
        live, error, seconds = _measure(measure)
    here = f"this machine ({hardware.usable_cpu_count()} cores)" if need == "cpu" else gpu_name()
    columns: list[tuple[str, dict[str, Any] | None]] = []
    if live is not None:
        columns.append((here if need == "cpu" else f"your GPU: {here}", live))
    if ref is not None:
        node = " node" if need == "cpu" else ""
        columns.append((f"reference: {ref.machine}{node}, {ref.date}", ref.values))
    print(title)
    if not columns:
        print("  Nothing to show: no live measurement here and no reference result shipped.")
    else:
        print("\n".join("  " + line for line in _table(rows, columns)))
    if ref is not None and live is None:
        print(f"  (reference from {ref.source})")
    if no_live:
        print(f"  Reference only, on every machine: {no_live}")
    elif error:
        print(f"  The live measurement failed here ({error}); the reference is shown instead.")
    elif live is None and not live_possible(need):
        print(f"  Not measured here: {_why_not(need)}; on a GPU node this cell measures your GPU.")
    verdict = _judge(expect, live)
    if expect is not None:
        if verdict:
            print(f"  ✓ on {here} too: {expect.claim}")
        elif verdict is False:
            print(f"  ✗ not on {here} at this size: {expect.claim}.")
            print(f"    Why: {expect.otherwise}")
    _log(title, rows, live, ref, here, error, seconds, verdict, no_live)
    return live


def _judge(expect: Expect | None, live: dict[str, Any] | None) -> bool | None:
    """Whether the live result shows the lesson; None when there is nothing to judge."""
    if expect is None or live is None:
        return None
    try:
        held = expect.holds(live)  # None: nothing to judge at this size (one GPU, say)
    except (KeyError, IndexError, TypeError, ZeroDivisionError):
        return None
    return None if held is None else bool(held)


def _why_not(need: str) -> str:
    if need == "cupy":
        return hardware.cupy_status()[1]
    if hardware.simulator_enabled():
        return "Numba runs kernels in the CUDA simulator, which times nothing real"
    return hardware.no_gpu_reason() or "no usable GPU"


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def _log(
    title: str,
    rows: list[Row],
    live: dict[str, Any] | None,
    ref: Reference | None,
    here: str,
    error: str,
    seconds: float,
    verdict: bool | None,
    no_live: str | None,
) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    entry = {
        "title": title,
        "machine": here,
        "reference_machine": ref.machine if ref else None,
        "rows": [
            {
                "label": r.label,
                "unit": r.unit,
                "live": _plain(r.value(live)),
                "reference": _plain(r.value(ref.values if ref else None)),
            }
            for r in rows
        ],
        "lesson_holds": verdict,
        "seconds": round(seconds, 3),
        "error": error or None,
        "reference_only": no_live,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
