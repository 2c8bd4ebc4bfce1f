"""Checks for the "your turn" cells of chapter 6 (multiple GPUs).

The splitting logic is what a multi-GPU program gets wrong most often (lost
or doubled elements at the seams, unequal pieces), and it is the same with or
without GPUs, so these checks run it with NumPy pieces standing in for devices.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from demos.checks._harness import CheckFailed, compare, watched


def split_ranges(student: Callable[[int, int], Any]) -> str:
    for n, parts in [(10, 3), (12, 4), (7, 1), (3, 5), (1_000_001, 4)]:
        got = [(r.start, r.stop) if isinstance(r, slice) else tuple(r) for r in student(n, parts)]
        what = f"split_ranges({n}, {parts})"
        if len(got) != parts:
            raise CheckFailed(
                f"{what} gives {len(got)} pieces, expected {parts} (one per device, "
                "empty ones allowed)."
            )
        if got[0][0] != 0 or got[-1][1] != n:
            raise CheckFailed(
                f"{what} starts at {got[0][0]} and ends at {got[-1][1]}, expected 0 and {n}."
            )
        for (_, stop), (start, _) in itertools.pairwise(got):
            if stop != start:
                raise CheckFailed(
                    f"{what}: a piece ends at {stop} but the next starts at {start} "
                    "(elements lost or counted twice at the seam)."
                )
        sizes = [stop - start for start, stop in got]
        if max(sizes) - min(sizes) > 1:
            raise CheckFailed(
                f"{what}: piece sizes {sizes[:8]} differ by more than one; "
                "the slowest device decides the time."
            )
    return "pieces are contiguous, cover everything once and differ in size by at most one."


def matvec_split(student: Callable[[np.ndarray, np.ndarray, int], Any]) -> str:
    rng = np.random.default_rng(9)
    for rows, cols, parts in [(10, 7, 3), (4, 5, 4), (3, 4, 5), (101, 30, 2)]:
        a = rng.random((rows, cols), dtype=np.float32)
        x = rng.random(cols, dtype=np.float32)
        what = f"A of {rows} x {cols} split {parts} ways"
        got = np.asarray(student(a, x, parts))
        compare(got, (a.astype(np.float64) @ x).astype(np.float32), what, rtol=1e-4, atol=1e-5)
    return "the row slabs' products, put together, equal A @ x."


def split_sum(student: Callable[[np.ndarray, int], Any]) -> str:
    rng = np.random.default_rng(10)
    for n, parts in [(10, 3), (1, 4), (1000, 4), (999_999, 2)]:
        values = rng.random(n)
        want = values.sum()
        given = watched(values)
        got = student(given, parts)
        _split(given.log, n, parts)
        if not np.isscalar(got) and np.ndim(got) != 0:
            raise CheckFailed(
                f"{n} values in {parts} pieces: return one number, not {np.shape(got)}."
            )
        if not np.isclose(float(got), want, rtol=1e-9):
            raise CheckFailed(
                f"{n} values in {parts} pieces: you return {float(got)!r}, expected {want!r}."
            )
    return "the partial sums of the pieces add up to the total."


def _split(log: dict[str, list[int]], n: int, parts: int) -> None:
    """Fail unless the values were summed piece by piece: no sum (or loop) over more than the
    largest piece ``split_ranges`` would make."""
    largest = -(-n // parts)
    if parts < 2 or n <= largest:
        return
    whole = [k for k in log["reductions"] + log["loops"] if k > largest]
    if whole:
        raise CheckFailed(
            f"{n} values in {parts} pieces: you summed {whole[0]} values at once, but no piece "
            f"holds more than {largest}. Split first (split_ranges(len(values), parts)), sum each "
            "piece on its own (as each device would), then add the partial sums."
        )
    if not log["pieces"]:
        raise CheckFailed(
            f"{n} values in {parts} pieces: your function never cut values into pieces. Sum "
            "values[r] for each range r of split_ranges(len(values), parts), then add those sums."
        )
