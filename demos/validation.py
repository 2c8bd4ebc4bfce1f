"""Input checks shared by every distance-matrix backend: one contract, one error per failure.

The backends are short numerical kernels; a wrong input would otherwise surface
as a cryptic error from einsum, a Numba typing failure or a silently wrong
matrix. Checking once, up front, turns each of those into one sentence that
says what was expected and what arrived. Every backend raises the same
exception for the same kind of mistake:

* ``TypeError``: not an array, a dtype other than float32/float64, two inputs of
  different dtypes, or arrays from the wrong library (NumPy where GPU arrays are
  expected, or the other way round);
* ``ValueError``: a shape that is not (n, d), inputs with different numbers of
  coordinates, an output of the wrong shape or layout, NaN or infinity.

NaN and infinity are looked for in host (NumPy) arrays only: scanning a GPU array
costs a pass over the data and a device synchronisation, which would dominate a
call at small sizes. GPU entry points document that they trust their input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def array_library(array: Any) -> str | None:
    """``"numpy"``, ``"cupy"`` or ``"numba"`` for arrays those libraries own, else None.

    Decided from the type's module, so that CuPy is never imported to answer.
    """
    if isinstance(array, np.ndarray):
        return "numpy"
    library = getattr(type(array), "stand_in_for", None) or type(array).__module__.split(".")[0]
    if library in ("cupy", "numba"):
        return library
    if hasattr(array, "__cuda_array_interface__"):
        return "cuda"  # another GPU array (PyTorch, JAX, ...) that shares its memory
    return None


def is_device_array(array: Any) -> bool:
    """True for GPU arrays: CuPy, Numba device arrays (real or simulated), CUDA-interface arrays."""
    if isinstance(array, np.ndarray):
        return False
    if array_library(array) in ("cupy", "numba"):
        return True  # cheap: the interface below is a property that builds a dict per access
    return hasattr(array, "__cuda_array_interface__") or hasattr(array, "copy_to_host")


def check_points(points: Any, *, name: str = "points", allow_nonfinite: bool = False) -> Any:
    """Return *points* if it is a usable (n, d) float array, else raise a clear error.

    Accepts NumPy arrays and any array with ``shape``/``dtype`` (CuPy arrays,
    Numba device arrays) without copying it to the host. NaN/infinity are looked
    for in NumPy arrays only (see the module docstring), unless *allow_nonfinite*.

    Raises:
        TypeError: not an array, or not float32/float64 (integers would overflow
            or silently round; convert with ``.astype(np.float64)``).
        ValueError: not two-dimensional, no points or no coordinates, or NaN/inf
            entries in a NumPy array (their distances are meaningless).
    """
    if isinstance(points, (list, tuple)):
        raise TypeError(
            f"{name} must be an array of shape (n, d), not a {type(points).__name__}; "
            "wrap it with np.asarray(..., dtype=np.float64)"
        )
    shape = getattr(points, "shape", None)
    dtype = getattr(points, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            f"{name} must be a NumPy or CuPy array of shape (n, d), got {type(points).__name__}"
        )
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {tuple(shape)}")
    n, d = shape
    if n < 1 or d < 1:
        raise ValueError(
            f"{name} needs at least one point with at least one coordinate; "
            f"got shape {tuple(shape)}"
        )
    if np.dtype(dtype) not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must have dtype float32 or float64, got {np.dtype(dtype)}; "
            f"convert it with {name}.astype(np.float64)"
        )
    if not allow_nonfinite and isinstance(points, np.ndarray) and not np.isfinite(points).all():
        bad = int(np.argwhere(~np.isfinite(points))[0, 0])
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {bad}); distances would be meaningless"
        )
    return points


def check_pair(
    points: Any,
    other: Any = None,
    *,
    names: tuple[str, str] = ("points", "other"),
    allow_nonfinite: bool = False,
) -> tuple[Any, Any]:
    """Check both inputs of a distance matrix; return ``(x, y)``, y = x when *other* is None.

    Raises ``ValueError`` for different numbers of coordinates and ``TypeError``
    for different dtypes or arrays of different libraries (NumPy with CuPy).
    """
    x = check_points(points, name=names[0], allow_nonfinite=allow_nonfinite)
    if other is None or other is points:
        return x, x
    y = check_points(other, name=names[1], allow_nonfinite=allow_nonfinite)
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same number of coordinates, "
            f"got {x.shape[1]} and {y.shape[1]}"
        )
    if np.dtype(x.dtype) != np.dtype(y.dtype):
        raise TypeError(
            f"{names[0]} and {names[1]} must have the same dtype, "
            f"got {np.dtype(x.dtype)} and {np.dtype(y.dtype)}"
        )
    if is_device_array(x) != is_device_array(y):
        raise TypeError(
            f"{names[0]} and {names[1]} must both be NumPy arrays or both GPU arrays, "
            f"got {type(x).__name__} and {type(y).__name__}"
        )
    return x, y


def require_host(*arrays: Any, backend: str) -> None:
    """Raise ``TypeError`` unless every array given (None skipped) is a NumPy array."""
    for array in arrays:
        if array is not None and not isinstance(array, np.ndarray):
            raise TypeError(
                f"{backend} takes NumPy arrays, got {type(array).__name__}; "
                "for GPU arrays use the backend's distance_matrix_device"
            )


def require_device(*arrays: Any, backend: str) -> None:
    """Raise ``TypeError`` unless every array given (None skipped) is a GPU array."""
    for array in arrays:
        if array is not None and not is_device_array(array):
            raise TypeError(
                f"{backend} takes GPU arrays (CuPy or Numba device arrays), got "
                f"{type(array).__name__}; use distance_matrix() for NumPy arrays"
            )


def check_output(result: Any, n: int, m: int, dtype: Any, *, name: str = "out") -> Any:
    """Check a caller's output array: shape (n, m) (``ValueError``), dtype (``TypeError``)."""
    shape = tuple(getattr(result, "shape", ()))
    if shape != (n, m):
        raise ValueError(f"{name} must have shape ({n}, {m}), got {shape}")
    if np.dtype(result.dtype) != np.dtype(dtype):
        raise TypeError(f"{name} must have dtype {np.dtype(dtype)}, got {np.dtype(result.dtype)}")
    return result
