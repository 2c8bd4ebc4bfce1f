"""Checks for chapter 4a's "your turn" cells: a loop without host waits, a busy fraction and
a pipeline's time.

They run the student's function on small inputs on any machine: the sync-free loop
on a NumPy module that counts every transfer to the host, so a loop that converts
each step's value is caught without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from demos.checks._harness import CheckFailed, watched
from demos.profiling.sync_counter import SyncCountingModule


def sync_free_total(loop: Callable[[Any, list], Any]) -> str:
    """*loop(xp, arrays)* must return the sum of all arrays' sums with at most one host transfer."""
    rng = np.random.default_rng(7)
    arrays = [watched(rng.random(50)) for _ in range(8)]
    xp = SyncCountingModule()
    got = loop(xp, arrays)
    syncs = xp.counter.syncs
    on_host = sum(len(a.log["reductions"]) + len(a.log["loops"]) for a in arrays)
    if on_host or not xp.counter.uploads or not xp.counter.operations:
        raise CheckFailed(
            (
                "your loop summed the host arrays with NumPy"
                if on_host
                else "your loop never used xp"
            )
            + f" ({xp.counter.uploads} copies to the device with xp.asarray): with 0 transfers "
            "it looks free, but nothing ran on the GPU. Copy each array with xp.asarray(a), sum "
            "it there and keep the running total a device array."
        )
    if syncs > 1:
        raise CheckFailed(
            f"your loop brought values to the host {syncs} times ({dict(xp.counter.transfers)}); "
            "keep the running total on the device and convert it once, after the loop."
        )
    expected = sum(float(a.sum()) for a in arrays)
    if abs(float(np.asarray(got)) - expected) >= 1e-9 * expected:
        raise CheckFailed(f"the total is {float(np.asarray(got))!r}, expected {expected!r}.")
    return f"right total, {syncs} host transfer(s) for {len(arrays)} iterations."


def busy_fraction(fn: Callable[[list[tuple[float, float]]], float]) -> str:
    """*fn(intervals)* must return the fraction of the span during which something runs."""
    cases = [
        ([(0, 1), (2, 3)], 2 / 3, "the gap between two intervals is idle time"),
        ([(0, 2), (1, 3)], 1.0, "two overlapping intervals count their overlap once"),
        ([(5, 6), (0, 1), (0.5, 2)], 3 / 6, "the intervals come in any order: sort them first"),
        (
            [(0, 10), (1, 2), (3, 4)],
            1.0,
            "(1, 2) and (3, 4) lie inside (0, 10), so everything up to 10 is busy: keep the "
            "furthest end seen so far, max(reach, e), not the end of the last interval",
        ),
    ]
    for intervals, expected, why in cases:
        got = fn(list(intervals))
        if abs(got - expected) >= 1e-9:
            raise CheckFailed(f"for {intervals} expected {expected:.3f}, got {got}: {why}.")
    return "right on all test timelines (gaps, overlaps, nested and unsorted intervals)."


def pipelined_time(fn: Callable[[float, float, int], float]) -> str:
    """*fn(compute_ms, copy_ms, blocks)*: the time of a two-stream pipeline in a simple model."""
    for c, t, k in ((2.0, 3.0, 5), (4.0, 1.0, 3), (1.0, 1.0, 1), (2.5, 2.5, 4)):
        expected = c + t + (k - 1) * max(c, t)
        got = fn(c, t, k)
        if abs(got - expected) >= 1e-9:
            raise CheckFailed(
                f"compute {c} ms, copy {t} ms, {k} blocks: expected {expected} ms, got {got}. "
                "The first block's compute and the last block's copy cannot overlap with "
                "anything; in between the slower of the two sets the pace."
            )
    return "the slower stage sets the pace once the pipeline is full."
