"""Compatibility module: ``distance_matrix(points)`` compiled for all CPU cores.

Kept for notebooks written against the original course layout; the code lives
in :mod:`demos.distance.numba_cpu` (which also has a single-core version).
"""

from __future__ import annotations

import numpy as np

from demos.distance import numba_cpu

__all__ = ["distance_matrix"]


def distance_matrix(points: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between all rows of *points* (n, d) -> (n, n)."""
    return numba_cpu.distance_matrix(points)
