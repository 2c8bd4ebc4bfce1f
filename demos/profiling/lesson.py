"""Immediate checks for the "your turn" cells of chapter 4a, and the reference results of 4a and 4b.

Each ``check_*`` function runs the student's code on small inputs, on any
machine, and either prints what was right or raises an ``AssertionError`` that
says what to fix. :func:`reference` reads a shipped result or says how to make one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from demos.benchmarks.record import REFERENCE_DIR
from demos.profiling import timeline
from demos.profiling.sync_counter import SyncCountingModule

#: Shipped reference results of this chapter and the command that makes each.
REFERENCES = {
    "profiling_h200": (
        "python -m demos bench profiling --output DIR  (then copy DIR/profiling.json)"
    ),
    "ncu_kernels_h200": "tools/gpu-node/ncu_kernels.sh DIR  (then copy DIR/ncu_kernels.json)",
    "patterns_h200": "python -m demos bench patterns --output DIR  (then copy DIR/patterns.json)",
}


def reference(name: str) -> dict[str, Any] | None:
    """``demos/results/<name>.json``, or None after saying that none is shipped and how to make
    it."""
    path = REFERENCE_DIR / f"{name}.json"
    if not path.exists():
        how = REFERENCES.get(name, "the chapter's benchmark command")
        print(
            f"No reference result demos/results/{name}.json "
            "is shipped with this copy of the course.\n"
            f"On a GPU node, make it with: {how}"
        )
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    gpus = data.get("environment", {}).get("gpus") or [{"name": "no GPU recorded"}]
    print(
        f"Reference: demos/results/{name}.json, measured on {gpus[0]['name']} "
        f"({data.get('environment', {}).get('date', 'date not recorded')})"
    )
    return data


def check_sync_free(loop: Callable[[Any, list], Any]) -> None:
    """*loop(xp, arrays)* must return the sum of all arrays' sums with at most one host transfer."""
    rng = np.random.default_rng(7)
    arrays = [rng.random(50) for _ in range(8)]
    xp = SyncCountingModule()
    got = loop(xp, arrays)
    syncs = xp.counter.syncs
    assert syncs <= 1, (
        f"your loop brought values to the host {syncs} times ({dict(xp.counter.transfers)}); "
        "keep the running total on the device and convert it once, after the loop"
    )
    expected = sum(float(a.sum()) for a in arrays)
    assert abs(float(np.asarray(got)) - expected) < 1e-9 * expected, "the total is wrong"
    print(f"Right total, {syncs} host transfer(s) for {len(arrays)} iterations.")


def check_busy_fraction(fn: Callable[[list[tuple[float, float]]], float]) -> None:
    """*fn(intervals)* must return the fraction of the span during which something runs."""
    cases = [
        ([(0, 1), (2, 3)], 2 / 3),
        ([(0, 2), (1, 3)], 1.0),
        ([(5, 6), (0, 1), (0.5, 2)], 3 / 6),
    ]
    for intervals, expected in cases:
        got = fn(list(intervals))
        assert abs(got - expected) < 1e-9, f"for {intervals} expected {expected:.3f}, got {got}"
    print("Right on all test timelines (gaps, overlaps, unsorted intervals).")


def check_pipelined_time(fn: Callable[[float, float, int], float]) -> None:
    """*fn(compute_ms, copy_ms, blocks)*: the time of a two-stream pipeline in a simple model."""
    for c, t, k in ((2.0, 3.0, 5), (4.0, 1.0, 3), (1.0, 1.0, 1), (2.5, 2.5, 4)):
        expected = c + t + (k - 1) * max(c, t)
        got = fn(c, t, k)
        assert abs(got - expected) < 1e-9, (
            f"compute {c} ms, copy {t} ms, {k} blocks: expected {expected} ms, got {got}. "
            "The first block's compute and the last block's copy cannot overlap with anything; "
            "in between the slower of the two sets the pace"
        )
    print("Right: the slower stage sets the pace once the pipeline is full.")


def intervals_of(
    records: list[dict[str, Any]], name: str | None = None
) -> list[tuple[float, float]]:
    """(start, end) pairs of a recorded timeline, optionally only the steps called *name*."""
    return [(r["start_ms"], r["end_ms"]) for r in records if name is None or r["name"] == name]


__all__ = [
    "check_busy_fraction",
    "check_pipelined_time",
    "check_sync_free",
    "intervals_of",
    "reference",
    "timeline",
]
