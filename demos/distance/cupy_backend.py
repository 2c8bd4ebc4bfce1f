"""Chapter 3's CuPy distance matrix: the drop-in, and a version that fits in GPU memory.

``distance_matrix_gpu`` is the NumPy code with ``numpy`` swapped for ``cupy``
(through :mod:`demos.distance.generic`). Its weakness is memory: the matmul
result and every broadcast step allocate a fresh n x m array, so the peak is
about 3x the output (~16 GB for 27,000 float64 points instead of 5.8 GB).

``distance_matrix_lean`` keeps one n x m buffer: cuBLAS writes -2 x.y^T
straight into it (``alpha=-2``), and one fused element-wise kernel adds the
norms in place (and clamps round-off negatives to 0). Peak memory is the
output plus O(n + m), and the data makes two passes instead of five.

Without a GPU every entry point raises
:class:`demos.hardware.GPUUnavailableError` with one clear sentence.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from demos import hardware
from demos.distance import generic
from demos.validation import check_output, check_points


def _cupy(what: str):
    return hardware.require_cupy(what)


def distance_matrix(points: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Host in, host out: copy to the GPU, compute with the drop-in, copy the matrix back."""
    cp = _cupy("The CuPy distance matrix")
    check_points(points, name="points")
    x = cp.asarray(points)
    y = None if other is None else cp.asarray(check_points(other, name="other"))
    return cp.asnumpy(distance_matrix_gpu(x, y))


def distance_matrix_gpu(x_gpu: Any, y_gpu: Any = None) -> Any:
    """Device in, device out: exactly the NumPy code running on CuPy arrays."""
    cp = _cupy("The CuPy distance matrix")
    if not isinstance(x_gpu, cp.ndarray) or (
        y_gpu is not None and not isinstance(y_gpu, cp.ndarray)
    ):
        raise TypeError(
            "distance_matrix_gpu takes CuPy arrays; use distance_matrix() for NumPy arrays"
        )
    return generic.distance_matrix(x_gpu, y_gpu)


@functools.lru_cache(maxsize=1)
def _add_norms_kernel():
    import cupy as cp

    return cp.ElementwiseKernel(
        "T x2, T y2",
        "T d",
        "d = max(d + x2 + y2, (T)0)",
        "demos_add_norms_inplace",
    )


def distance_matrix_lean(x_gpu: Any, y_gpu: Any = None, out: Any = None) -> Any:
    """Device in, device out, with peak memory = the output + O(n + m).

    *out* (CuPy, shape (n, m), input dtype, C-contiguous) is filled and returned
    when given; the chunked version passes a view of its block buffer here.
    """
    cp = _cupy("The memory-lean CuPy distance matrix")
    if not isinstance(x_gpu, cp.ndarray) or (
        y_gpu is not None and not isinstance(y_gpu, cp.ndarray)
    ):
        raise TypeError(
            "distance_matrix_lean takes CuPy arrays; use distance_matrix() for NumPy arrays"
        )
    # No NaN scan on the device: it would cost a pass and a sync (host entry points check).
    check_points(x_gpu, name="x_gpu", allow_nonfinite=True)
    y = x_gpu if y_gpu is None else check_points(y_gpu, name="y_gpu", allow_nonfinite=True)
    if y.shape[1] != x_gpu.shape[1] or y.dtype != x_gpu.dtype:
        raise ValueError(
            "x_gpu and y_gpu must have the same number of coordinates and the same dtype"
        )
    x = cp.ascontiguousarray(x_gpu)
    y = x if y is x_gpu else cp.ascontiguousarray(y)
    n, m = x.shape[0], y.shape[0]
    if out is None:
        out = cp.empty((n, m), dtype=x.dtype)
    else:
        check_output(out, n, m, x.dtype, name="out")
        if not out.flags.c_contiguous:
            raise ValueError("out must be C-contiguous (a block of whole rows)")
    x2 = generic.row_norms(x)
    y2 = x2 if y is x else generic.row_norms(y)
    from cupy import cublas  # imported here: loading cuBLAS needs the CUDA libraries

    cublas.gemm("N", "T", x, y, out=out, alpha=-2.0, beta=0.0)  # out = -2 x y^T, no temporary
    _add_norms_kernel()(x2[:, None], y2[None, :], out)
    return out
