"""Squared Euclidean distance matrix compiled for the CPU with Numba.

Chapter 4 compares the CUDA kernels with the same loop compiled for the CPU,
once on a single core (``distance_matrix(points, parallel=False)``) and once on
all cores (the default, ``prange`` over the rows).

Why these loops beat NumPy's ``x2 - 2 x.y + y2`` formulation although they do
"more arithmetic": for d = 3 the matrix product has an inner dimension of
three, so BLAS cannot block it and the work is dominated by *memory traffic*.
NumPy writes the n x m product, then reads and writes it again for each of the
two broadcast additions (three or more passes over a matrix that does not fit
in any cache). The loops here make one pass: the coordinates of ``other`` are
transposed once to shape (d, m), so the innermost loop runs over contiguous
columns, which LLVM vectorises (SIMD), and one output row (m values) stays in
the L1/L2 cache while the d coordinate passes update it. They are also exact:
``(x - y)**2`` never suffers the cancellation of ``x2 - 2xy + y2`` for close
points.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from demos.validation import check_pair, require_host

__all__ = ["distance_matrix"]


@njit(inline="always")
def _fill_row(row: np.ndarray, xi: np.ndarray, yt: np.ndarray) -> None:
    """One output row: the first coordinate initialises it (keeping the dtype), the others add."""
    y0 = yt[0]
    for j in range(row.shape[0]):
        t = xi[0] - y0[j]
        row[j] = t * t
    for k in range(1, xi.shape[0]):
        xik = xi[k]
        yk = yt[k]
        for j in range(row.shape[0]):
            t = xik - yk[j]
            row[j] += t * t


@njit(cache=True)
def _rows_serial(x: np.ndarray, yt: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        _fill_row(out[i], x[i], yt)


@njit(parallel=True, cache=True)
def _rows_parallel(x: np.ndarray, yt: np.ndarray, out: np.ndarray) -> None:
    # prange hands contiguous blocks of rows to the threads, so each thread
    # writes its own part of the matrix (no sharing, no false sharing).
    for i in prange(x.shape[0]):
        _fill_row(out[i], x[i], yt)


def distance_matrix(
    points: np.ndarray, other: np.ndarray | None = None, *, parallel: bool = True
) -> np.ndarray:
    """D[i, j] = sum_k (points[i, k] - other[j, k])**2, on all CPU cores or on one.

    *other* defaults to *points*; the result has the input dtype (float32 or
    float64). With *parallel* the rows are spread over the threads Numba is set
    to use (``NUMBA_NUM_THREADS`` or ``numba.set_num_threads``).
    """
    x, y = check_pair(points, other)
    require_host(x, y, backend="The Numba CPU distance matrix")
    x = np.ascontiguousarray(x)
    yt = np.ascontiguousarray(y.T)  # (d, m): the innermost loop runs over contiguous columns
    out = np.empty((x.shape[0], y.shape[0]), dtype=x.dtype)
    (_rows_parallel if parallel else _rows_serial)(x, yt, out)
    return out
