"""Chapter 3's memory-lean CuPy distance matrix: one n x m buffer, two passes over it.

cuBLAS writes -2 x.y^T straight into the output (``alpha=-2``), and one fused
element-wise kernel adds the norms in place (and clamps round-off negatives to
0). Peak memory is the output plus O(n + m), against ~3x the output for the
drop-in of :mod:`demos.distance.cupy_backend`, and the data makes two passes
instead of five. :mod:`demos.distance.chunked` fills its blocks with it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from demos import hardware
from demos.distance import generic
from demos.distance.cupy_backend import on_gpu_from_host
from demos.validation import check_output, check_pair, require_device

WHAT = "The memory-lean CuPy distance matrix"


def distance_matrix(points: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Host in, host out: copy to the GPU, compute with one buffer, copy the matrix back."""
    return on_gpu_from_host(distance_matrix_device, points, other, what=WHAT)


@functools.lru_cache(maxsize=1)
def _add_norms_kernel():
    import cupy as cp

    return cp.ElementwiseKernel(
        "T x2, T y2",
        "T d",
        "d = max(d + x2 + y2, (T)0)",
        "demos_add_norms_inplace",
    )


def distance_matrix_device(x: Any, y: Any = None, out: Any = None) -> Any:
    """Device in, device out, with peak memory = the output + O(n + m).

    *out* (CuPy, shape (n, m), input dtype, C-contiguous) is filled and returned
    when given; the chunked version passes a view of its block buffer here.
    """
    cp = hardware.require_cupy(WHAT)
    x, y = check_pair(x, y, names=("x", "y"))
    require_device(x, y, backend=WHAT + " on device")
    same = y is x
    x = cp.ascontiguousarray(x)
    y = x if same else cp.ascontiguousarray(y)
    n, m = x.shape[0], y.shape[0]
    if out is None:
        out = cp.empty((n, m), dtype=x.dtype)
    else:
        check_output(out, n, m, x.dtype)
        if not out.flags.c_contiguous:
            raise ValueError("out must be C-contiguous (a block of whole rows)")
    x2 = generic.row_norms(x)
    y2 = x2 if same else generic.row_norms(y)
    from cupy import cublas  # imported here: loading cuBLAS needs the CUDA libraries

    cublas.gemm("N", "T", x, y, out=out, alpha=-2.0, beta=0.0)  # out = -2 x y^T, no temporary
    _add_norms_kernel()(x2[:, None], y2[None, :], out)
    return out
