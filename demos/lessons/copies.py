"""Device-to-host copies: into a fresh array, into a touched pageable array, into pinned memory.

A fresh ``np.empty`` result has no physical pages yet: the copy pays a page
fault for every 4 KiB page it touches first. An array written once before has
its pages; the driver still stages a pageable copy through a pinned buffer.
Pinned (page-locked) memory lets the GPU's copy engine write straight into it.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
from numba import cuda

from demos.live import Expect, Row, Table


def _median_ms(copy, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        copy()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def run(n: int = 4096, repeats: int = 5) -> dict[str, Any]:
    """Copy an n x n float64 matrix from the GPU three ways; milliseconds and GB/s of each."""
    device = cuda.to_device(np.arange(n * n, dtype=np.float64).reshape(n, n))
    nbytes = device.nbytes
    touched = np.ones((n, n))
    pinned = cuda.pinned_array((n, n), dtype=np.float64)
    pinned[...] = 0.0
    ways = {
        "fresh_pageable": lambda: device.copy_to_host(np.empty((n, n))),
        "touched_pageable": lambda: device.copy_to_host(touched),
        "pinned": lambda: device.copy_to_host(pinned),
    }
    result: dict[str, Any] = {"n": n, "bytes": nbytes}
    for name, copy in ways.items():
        copy()
        ms = _median_ms(copy, repeats)
        result[name] = {"median_ms": ms, "gb_per_s": nbytes / ms / 1e6}
    if not np.array_equal(pinned[-1, -3:], np.arange(n * n - 3, n * n, dtype=np.float64)):
        raise AssertionError("the pinned copy did not bring the matrix back")
    return result


def live(repeats: int = 5) -> dict[str, Any]:
    """The lesson at the reference size (a 134 MB matrix: larger than any cache, small for a
    GPU)."""
    return run(n=4096, repeats=repeats)


TABLE = Table(
    "Copying the result to the host: into a fresh array, a touched one, pinned memory",
    (
        Row("MB copied", lambda r: r["bytes"] / 1e6, "MB", 0),
        Row("into a fresh array", "fresh_pageable.median_ms", "ms", 2),
        Row("into a touched array", "touched_pageable.median_ms", "ms", 2),
        Row("into pinned memory", "pinned.median_ms", "ms", 2),
        Row("pinned, GB/s", "pinned.gb_per_s", "GB/s", 1),
    ),
    Expect(
        "pinned memory is fastest and a fresh array slowest",
        lambda r: (
            r["pinned"]["median_ms"]
            < r["touched_pageable"]["median_ms"]
            < r["fresh_pageable"]["median_ms"]
        ),
        "This host keeps freed pages mapped (or uses huge pages), so a fresh array costs no "
        "more page faults than a touched one.",
    ),
)
