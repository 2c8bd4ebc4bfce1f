"""The reference distance matrix every backend, benchmark and test is checked against.

Written the obvious way, D[i, j] = sum_k (x[i, k] - y[j, k])**2, by broadcasting
in float64: no expansion of the square, so no cancellation, and no cleverness
that could share a bug with the code it checks. It needs n * m * d temporaries,
so it is meant for the small sizes of tests and spot checks (a few thousand
points, or a few sampled rows of a large matrix with :func:`reference_rows`).
"""

from __future__ import annotations

import numpy as np


def reference_distance(points: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Squared distances between the rows of *points* and *other* (default *points*), float64."""
    x = np.asarray(points, dtype=np.float64)
    y = x if other is None else np.asarray(other, dtype=np.float64)
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def reference_rows(points: np.ndarray, rows: np.ndarray, other: np.ndarray | None = None):
    """Only the given *rows* of :func:`reference_distance`, for spot checks of large matrices."""
    x = np.asarray(points, dtype=np.float64)
    y = x if other is None else np.asarray(other, dtype=np.float64)
    return reference_distance(x[np.asarray(rows)], y)


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) a backend's result in *dtype* must meet against the reference.

    Loose enough for the expanded formula |x|^2 - 2 x.y + |y|^2 (whose error grows
    with the norms) on points in the unit cube, tight enough to catch a wrong index.
    """
    return (1e-4, 1e-4) if np.dtype(dtype) == np.float32 else (1e-9, 1e-11)


def max_error(result, points: np.ndarray, other: np.ndarray | None = None) -> float:
    """Largest absolute difference between *result* (any host array) and the reference."""
    expected = reference_distance(points, other)
    return float(np.max(np.abs(np.asarray(result, dtype=np.float64) - expected)))
