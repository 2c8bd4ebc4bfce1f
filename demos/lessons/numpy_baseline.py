"""Why the NumPy distance matrix is slow, taken apart into its three costs.

``x2[:, None] - 2 * (x @ x.T) + x2[None, :]`` allocates a fresh n x n result
for the matrix product and for each of the element-wise steps. Three costs
hide in it: first-touch page faults (a fresh array gets its physical pages
only when first written), temporaries (every step reads and writes n^2
values), and a matrix product with k = 3, for which BLAS does little arithmetic
per byte moved. Each is timed apart here, with the same inputs, so that a
chapter can compare the GPU with a fair CPU baseline that reuses its output.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from demos.live import Expect, Row, Table


def _median_s(work: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def reused_output(points: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The same matrix with no temporaries and no fresh pages: every step writes into *out*."""
    x2 = np.einsum("ij,ij->i", points, points)
    np.matmul(points, points.T, out=out)
    out *= -2.0
    out += x2[:, None]
    out += x2[None, :]
    return out


def run(n: int = 4096, repeats: int = 3) -> dict[str, Any]:
    """Seconds of each cost for *n* float64 points in 3-D (median of *repeats*)."""
    rng = np.random.default_rng(0)
    p = rng.random((n, 3))
    x2 = np.einsum("ij,ij->i", p, p)
    xy = p @ p.T
    out = np.empty((n, n))
    out.fill(0.0)
    want = x2[:, None] - 2 * xy + x2[None, :]
    np.testing.assert_allclose(reused_output(p, out), want, rtol=1e-9, atol=1e-12)
    return {
        "n": n,
        "bytes_per_matrix": n * n * 8,
        "naive_total_s": _median_s(lambda: x2[:, None] - 2 * (p @ p.T) + x2[None, :], repeats),
        "matmul_fresh_s": _median_s(lambda: p @ p.T, repeats),
        "matmul_into_touched_s": _median_s(lambda: np.matmul(p, p.T, out=out), repeats),
        "elementwise_fresh_s": _median_s(lambda: x2[:, None] - 2 * xy + x2[None, :], repeats),
        "first_touch_fill_s": _median_s(lambda: np.empty((n, n)).fill(1.0), repeats),
        "refill_touched_s": _median_s(lambda: out.fill(1.0), repeats),
        "reused_output_total_s": _median_s(lambda: reused_output(p, out), repeats),
    }


TABLE = Table(
    "The NumPy distance matrix taken apart (float64, time per step)",
    (
        Row("n", "n", "", 0),
        Row("naive total", lambda r: r["naive_total_s"] * 1e3, "ms", 1),
        Row("matmul into a fresh array", lambda r: r["matmul_fresh_s"] * 1e3, "ms", 1),
        Row("matmul into a touched one", lambda r: r["matmul_into_touched_s"] * 1e3, "ms", 1),
        Row("element-wise, fresh arrays", lambda r: r["elementwise_fresh_s"] * 1e3, "ms", 1),
        Row("first touch of a matrix", lambda r: r["first_touch_fill_s"] * 1e3, "ms", 1),
        Row("refill of a touched one", lambda r: r["refill_touched_s"] * 1e3, "ms", 1),
        Row("output reused, total", lambda r: r["reused_output_total_s"] * 1e3, "ms", 1),
    ),
    Expect(
        "reusing one output array beats the naive expression",
        lambda r: r["reused_output_total_s"] < r["naive_total_s"],
        "At this small size the matrix fits in the CPU's caches, so fresh arrays cost little.",
    ),
)
