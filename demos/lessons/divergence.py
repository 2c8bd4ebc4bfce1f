"""Divergence, measured: two branches of equal length, split by lane parity or by warp.

Both kernels do exactly the same arithmetic per thread: 50% of the threads run
branch A, 50% branch B, each *iterations* long. Split by lane parity, every warp
holds threads of both branches and runs A, then B, with half its lanes masked
off. Split by warp, every warp runs one branch only. The first should take
about twice as long; the cost model of chapter 2 counts distinct branches, not
distinct lengths.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda, float32

from demos.gpu_timer import event_stats, numba_events
from demos.live import Expect, Row, Table


@cuda.jit(device=True)
def _one_of_two_loops(x, take_first, iterations):
    """Two loops of equal length and different arithmetic; which one runs is the caller's choice."""
    if take_first:
        for _ in range(iterations):
            x = x * float32(0.999) + float32(0.5)
    else:
        for _ in range(iterations):
            x = x * float32(1.001) - float32(0.25)
    return x


@cuda.jit
def split_by_lane(out, iterations):
    i = cuda.grid(1)
    if i < out.size:  # neighbours disagree: every warp runs both loops
        out[i] = _one_of_two_loops(out[i], i % 2 == 0, iterations)


@cuda.jit
def split_by_warp(out, iterations):
    i = cuda.grid(1)
    if i < out.size:  # all 32 threads of a warp agree: each warp runs one loop
        out[i] = _one_of_two_loops(out[i], (i // 32) % 2 == 0, iterations)


def expected(n: int, iterations: int, by_warp: bool) -> np.ndarray:
    """What the kernels compute, in NumPy (float32), for checking."""
    x = np.ones(n, dtype=np.float32)
    index = np.arange(n)
    first = (index // 32) % 2 == 0 if by_warp else index % 2 == 0
    for _ in range(iterations):
        x = np.where(
            first, x * np.float32(0.999) + np.float32(0.5), x * np.float32(1.001) - np.float32(0.25)
        )
    return x


def run(n: int, iterations: int, threads_per_block: int = 256, repeats: int = 10) -> dict[str, Any]:
    """Time both kernels on *n* float32 values; check one launch of each against NumPy first."""
    blocks = -(-n // threads_per_block)
    result: dict[str, Any] = {
        "n": n,
        "iterations": iterations,
        "threads_per_block": threads_per_block,
    }
    for name, kernel, by_warp in (
        ("by_lane_parity", split_by_lane, False),
        ("by_warp", split_by_warp, True),
    ):
        small = cuda.to_device(np.ones(256, dtype=np.float32))
        kernel[1, 256](small, 20)
        np.testing.assert_allclose(small.copy_to_host(), expected(256, 20, by_warp), rtol=1e-4)
        data = cuda.to_device(np.ones(n, dtype=np.float32))
        result[name] = event_stats(
            numba_events(),
            lambda k=kernel, d=data: k[blocks, threads_per_block](d, iterations),
            repeats,
        )
    result["ratio"] = result["by_lane_parity"]["median_ms"] / result["by_warp"]["median_ms"]
    return result


def live(repeats: int = 10) -> dict[str, Any]:
    """The lesson sized for this GPU: 64 waves of the threads its multiprocessors hold at once."""
    from demos import hardware

    n = max(1 << 20, hardware.multiprocessors() * 2048 * 64)
    return run(n=n, iterations=200, repeats=repeats)


TABLE = Table(
    "Divergence: two branches of equal length, split by lane parity or by warp",
    (
        Row("threads", "n", "", 0),
        Row("iterations per branch", "iterations", "", 0),
        Row("split by lane parity", "by_lane_parity.median_ms", "ms", 2),
        Row("split by warp", "by_warp.median_ms", "ms", 2),
        Row("lane parity / warp", "ratio", "x", 2),
    ),
    Expect(
        "a warp whose threads take two branches runs both, so it takes about twice as long",
        lambda r: r["ratio"] > 1.5,
        "The loops are short enough on this GPU that launching and writing the result, "
        "not the branches, set the time.",
    ),
)
