"""Chapter 3's NumPy distance matrix: the CPU baseline every other backend is compared with."""

from __future__ import annotations

import numpy as np

from demos.distance import generic
from demos.validation import check_points


def distance_matrix(points: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Squared distances between the rows of *points* and *other* (default: *points*)."""
    check_points(points, name="points")
    if not isinstance(points, np.ndarray) or (
        other is not None and not isinstance(other, np.ndarray)
    ):
        raise TypeError(
            "the NumPy backend takes NumPy arrays; use demos.distance.cupy_backend for CuPy arrays"
        )
    return generic.distance_matrix(points, other)
