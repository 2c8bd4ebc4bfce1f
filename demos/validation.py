"""Input checks shared by every distance-matrix backend.

The backends are short numerical kernels; a wrong input would otherwise surface
as a cryptic error from einsum, a Numba typing failure or a silently wrong
matrix. Checking once, up front, turns each of those into one sentence that
says what was expected and what arrived.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_points(points: Any, *, name: str = "points", allow_nonfinite: bool = False) -> Any:
    """Return *points* if it is a usable (n, d) float array, else raise a clear error.

    Accepts NumPy arrays and any array with ``shape``/``dtype`` (CuPy arrays,
    Numba device arrays) without copying it to the host, except for the NaN check,
    which runs with the array's own module.

    Raises:
        TypeError: not an array, or not float32/float64 (integers would overflow
            or silently round; convert with ``.astype(np.float64)``).
        ValueError: not two-dimensional, no points or no coordinates, or NaN/inf
            entries (their distances are meaningless) unless *allow_nonfinite*.
    """
    if isinstance(points, (list, tuple)):
        raise TypeError(
            f"{name} must be an array of shape (n, d), not a {type(points).__name__}; "
            "wrap it with np.asarray(..., dtype=np.float64)"
        )
    shape = getattr(points, "shape", None)
    dtype = getattr(points, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"{name} must be a NumPy or CuPy array of shape (n, d), got {type(points).__name__}")
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {tuple(shape)}")
    n, d = shape
    if n < 1 or d < 1:
        raise ValueError(f"{name} needs at least one point with at least one coordinate; got shape {tuple(shape)}")
    if np.dtype(dtype) not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must have dtype float32 or float64, got {np.dtype(dtype)}; "
            f"convert it with {name}.astype(np.float64)"
        )
    if not allow_nonfinite:
        xp = _array_module(points)
        if xp is not None and not bool(xp.isfinite(points).all()):
            bad = int(xp.argwhere(~xp.isfinite(points))[0, 0])
            raise ValueError(f"{name} contains NaN or infinity (first at row {bad}); distances would be meaningless")
    return points


def _array_module(array: Any):
    """numpy or cupy for arrays they own; None for others (e.g. Numba device arrays)."""
    if isinstance(array, np.ndarray):
        return np
    module = type(array).__module__.split(".")[0]
    if module == "cupy":
        import cupy

        return cupy
    return None


def check_output(result: Any, n: int, m: int, dtype: Any, *, name: str = "result") -> Any:
    """Check a caller-provided output array: shape (n, m) and the expected dtype."""
    shape = tuple(getattr(result, "shape", ()))
    if shape != (n, m):
        raise ValueError(f"{name} must have shape ({n}, {m}), got {shape}")
    if np.dtype(result.dtype) != np.dtype(dtype):
        raise TypeError(f"{name} must have dtype {np.dtype(dtype)}, got {np.dtype(result.dtype)}")
    return result
