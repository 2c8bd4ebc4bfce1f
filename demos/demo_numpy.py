"""The original course's NumPy demo: ``from demos.demo_numpy import distance_matrix``."""

from __future__ import annotations

import numpy as np

from demos.distance.numpy_backend import distance_matrix as _distance_matrix


def distance_matrix(points: np.ndarray) -> np.ndarray:
    """(n, d) NumPy points -> (n, n) NumPy matrix of squared distances (einsum, matmul, ops)."""
    return _distance_matrix(points)
