"""Chapter 3's CuPy distance matrix: the NumPy code with ``numpy`` swapped for ``cupy``.

The computation is :mod:`demos.distance.generic` running on CuPy arrays. Its
weakness is memory: the matmul result and every broadcast step allocate a fresh
n x m array, so the peak is about 3x the output (~16 GB for 27,000 float64
points instead of 5.8 GB); :mod:`demos.distance.cupy_lean` fixes that.

Without a GPU every entry point raises
:class:`demos.hardware.GPUUnavailableError` with one clear sentence.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from demos import hardware
from demos.distance import generic
from demos.validation import check_output, check_pair, require_device, require_host

WHAT = "The CuPy distance matrix"


def distance_matrix(points: np.ndarray, other: np.ndarray | None = None) -> np.ndarray:
    """Host in, host out: copy to the GPU, compute there, copy the matrix back."""
    return on_gpu_from_host(distance_matrix_device, points, other, what=WHAT)


def distance_matrix_device(x: Any, y: Any = None, out: Any = None) -> Any:
    """Device in, device out: exactly the NumPy code running on CuPy arrays.

    The drop-in allocates its own result; with *out* (CuPy, (n, m), input dtype)
    the result is copied into it, so callers can treat every GPU backend alike.
    """
    cp = hardware.require_cupy(WHAT)
    x, y = check_pair(x, y, names=("x", "y"))
    require_device(x, y, backend=WHAT + " on device")
    result = generic.distance_of_checked(cp.asarray(x), cp.asarray(y))
    if out is None:
        return result
    check_output(out, x.shape[0], y.shape[0], x.dtype)
    out[...] = result
    return out


def on_gpu_from_host(device_function, points: Any, other: Any, *, what: str) -> np.ndarray:
    """Check NumPy inputs, copy them to the GPU, run *device_function*, copy the result back.

    Shared by the CuPy backends: the transfers are part of what chapter 3 measures.
    """
    cp = hardware.require_cupy(what)
    x, y = check_pair(points, other)
    require_host(x, y, backend=what)
    d_x = cp.asarray(x)
    d_y = d_x if y is x else cp.asarray(y)
    return cp.asnumpy(device_function(d_x, d_y))
