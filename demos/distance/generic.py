"""The distance matrix written once for NumPy and CuPy (``get_array_module`` style).

The course formulation expands the square: |x - y|^2 = |x|^2 - 2 x.y + |y|^2,
so the O(n m d) work becomes one matrix product (fast BLAS / cuBLAS) plus
O(n m) element-wise work. The three steps are separate functions so that the
benchmark can time each one (chapter 3's per-operation breakdown): which step
dominates changes between the CPU and the GPU.

The array module is picked from the arguments, so the same code runs on CuPy
arrays on a GPU and on NumPy arrays on a laptop where CuPy is missing or has no
GPU. Note that the expansion can give tiny negative values (round-off) where two
points coincide; the course keeps the plain formula here.
"""

from __future__ import annotations

from typing import Any

from demos.kernel_testing import get_array_module
from demos.validation import check_pair

__all__ = [
    "combine",
    "distance_matrix",
    "distance_of_checked",
    "get_array_module",
    "inner_products",
    "row_norms",
]


def row_norms(x: Any) -> Any:
    """Squared norm of every row, |x_i|^2, as a 1-D array (einsum avoids a temporary x*x)."""
    xp = get_array_module(x)
    return xp.einsum("ij,ij->i", x, x)


def inner_products(x: Any, y: Any) -> Any:
    """All inner products x_i . y_j, an (n, m) matrix: the O(n m d) part, done by (cu)BLAS."""
    return x @ y.T


def combine(x2: Any, xy: Any, y2: Any) -> Any:
    """|x_i|^2 - 2 x_i.y_j + |y_j|^2 by broadcasting (allocates temporaries of size n*m)."""
    return x2[:, None] - 2 * xy + y2[None, :]


def distance_matrix(points: Any, other: Any = None) -> Any:
    """Squared distances between the rows of *points* and *other* (default *points*).

    Both NumPy or both CuPy, same dtype; the result is in the inputs' module and dtype.
    """
    x, y = check_pair(points, other)
    return distance_of_checked(x, y)


def distance_of_checked(x: Any, y: Any) -> Any:
    """The three steps on inputs :func:`demos.validation.check_pair` has accepted (y may be x)."""
    x2 = row_norms(x)
    y2 = x2 if y is x else row_norms(y)
    return combine(x2, inner_products(x, y), y2)
