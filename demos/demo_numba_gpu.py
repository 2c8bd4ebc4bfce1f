"""Compatibility module for the original course notebook (chapter 4).

The notebook does ``from demos.demo_numba_gpu import distance_matrix`` and
launches it exactly as the first lecture did::

    result = np.empty((n, n), dtype=points.dtype)
    distance_matrix[(n, n), (1, 1)](points, result)

``distance_matrix`` is therefore the raw ``numba.cuda.jit`` kernel (one thread
per entry, squared distances of *points* to themselves), not a wrapper. Numba
copies host arrays to the GPU and back around the launch, which is convenient
but slow; :mod:`demos.distance.numba_cuda` has the faster kernels and the
device-array API; the formula itself is :func:`demos.distance.cuda_teaching.squared_distance`.
"""

from __future__ import annotations

from numba import cuda

from demos.distance.cuda_teaching import squared_distance

__all__ = ["distance_matrix"]


@cuda.jit
def distance_matrix(points, result):
    """result[i, j] = squared distance between points i and j, one thread per (i, j)."""
    i, j = cuda.grid(2)
    if i < result.shape[0] and j < result.shape[1]:
        result[i, j] = squared_distance(points, i, points, j)
