"""Chapter 3's NumPy distance matrix: the CPU baseline every other backend is compared with."""

from __future__ import annotations

import numpy as np

from demos.distance import generic
from demos.validation import check_pair, require_host


def distance_matrix(points: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Squared distances between the rows of *points* and *other* (default: *points*)."""
    x, y = check_pair(points, other)
    require_host(x, y, backend="the NumPy distance matrix")
    return generic.distance_of_checked(x, y)
