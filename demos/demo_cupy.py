"""The original course's CuPy demo: ``from demos.demo_cupy import distance_matrix``.

NumPy in, NumPy out (the transfers are part of what chapter 3 measures). On a
machine without a GPU it raises :class:`demos.hardware.GPUUnavailableError`.
"""

from __future__ import annotations

import numpy as np

from demos.distance.cupy_backend import distance_matrix as _distance_matrix


def distance_matrix(points: np.ndarray) -> np.ndarray:
    """(n, d) NumPy points -> (n, n) NumPy matrix of squared distances, computed with CuPy."""
    return _distance_matrix(points)
