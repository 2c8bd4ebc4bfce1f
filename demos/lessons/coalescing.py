"""Coalescing, isolated: the same distance kernel and block shape, only the index mapping swapped.

``rows_on_x`` gives consecutive threads of a warp consecutive *rows* i: their
writes ``out[i, j]`` are n * 8 bytes apart. ``columns_on_x`` gives them
consecutive columns j: 32 neighbouring float64 entries, 256 bytes, 8 sectors
of 32 bytes. The memory system moves whole 32-byte sectors, so
:func:`sectors_touched` counts what one warp's store costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import cuda

from demos.distance.numba_cuda import coalesced_kernel as columns_on_x
from demos.distance.numba_cuda import naive_kernel as rows_on_x
from demos.gpu_timer import event_stats, numba_events
from demos.live import Expect, Row, Table

SECTOR_BYTES = 32


def sectors_touched(byte_addresses: Sequence[int]) -> int:
    """How many distinct 32-byte sectors a warp's accesses fall into."""
    return len({address // SECTOR_BYTES for address in byte_addresses})


def warp_sectors(n: int, itemsize: int = 8, warp: int = 32) -> dict[str, int]:
    """Sectors one warp's store into an n x n row-major matrix touches, for either mapping."""
    rows_mapping = [(lane * n + 0) * itemsize for lane in range(warp)]  # lane -> row i
    columns_mapping = [(0 * n + lane) * itemsize for lane in range(warp)]  # lane -> column j
    return {
        "rows_on_x": sectors_touched(rows_mapping),
        "columns_on_x": sectors_touched(columns_mapping),
        "bytes_used": warp * itemsize,
    }


def run(n: int, blocks: Sequence[tuple[int, int]], repeats: int = 10) -> dict[str, Any]:
    """Time both mappings for each block shape on an n x n float64 matrix (device arrays, no
    copies)."""
    rng = np.random.default_rng(0)
    points = rng.random((n, 3))
    want = ((points[:64, None, :] - points[None, :64, :]) ** 2).sum(axis=-1)
    d_points = cuda.to_device(points)
    out = cuda.device_array((n, n))
    result: dict[str, Any] = {"n": n, "dtype": "float64", "sectors_per_warp_store": warp_sectors(n)}
    for bx, by in blocks:
        grid = (-(-n // bx), -(-n // by))  # square matrix: the same grid serves both mappings
        entry: dict[str, Any] = {}
        for name, kernel in (("rows_on_x", rows_on_x), ("columns_on_x", columns_on_x)):
            kernel[grid, (bx, by)](d_points, d_points, out)
            np.testing.assert_allclose(out[:64].copy_to_host()[:, :64], want, rtol=1e-12)
            entry[name] = event_stats(
                numba_events(),
                lambda k=kernel, g=grid, b=(bx, by): k[g, b](d_points, d_points, out),
                repeats,
            )
        entry["ratio"] = entry["rows_on_x"]["median_ms"] / entry["columns_on_x"]["median_ms"]
        result[f"{bx}x{by}"] = entry
    return result


def live(repeats: int = 10) -> dict[str, Any]:
    """The lesson sized for this GPU: a float64 matrix several times larger than its L2 cache."""
    from demos import hardware

    n = 8192 if hardware.gpu_memory_bytes() >= 16 * 2**30 else 4096
    return run(n=n, blocks=[(32, 8), (8, 8)], repeats=repeats)


TABLE = Table(
    "Coalescing: the same kernel, rows or columns on threadIdx.x (float64, GPU time)",
    (
        Row("n", "n", "", 0),
        Row("32 x 8 blocks, rows on x", "32x8.rows_on_x.median_ms", "ms", 3),
        Row("32 x 8 blocks, columns on x", "32x8.columns_on_x.median_ms", "ms", 3),
        Row("32 x 8: rows / columns", "32x8.ratio", "x", 2),
        Row("8 x 8 blocks, rows on x", "8x8.rows_on_x.median_ms", "ms", 3),
        Row("8 x 8 blocks, columns on x", "8x8.columns_on_x.median_ms", "ms", 3),
        Row("8 x 8: rows / columns", "8x8.ratio", "x", 2),
    ),
    Expect(
        "with 32 x 8 blocks, a warp that writes 32 neighbouring columns is faster",
        lambda r: r["32x8"]["ratio"] > 1.2,
        "This GPU's L2 cache gathers the scattered writes before they reach memory at this size.",
    ),
)
