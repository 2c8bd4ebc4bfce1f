"""The kernel-testing core: what every test of a student's kernel or array code is made of.

Two voices test student code: the chapters' friendly checks (:mod:`demos.checks`,
one sentence of advice at once) and the assignments' generic tests
(:mod:`demos.grading`, the same inputs and terse messages for everyone). Both
need the same few mechanics, kept here once so that a fix reaches both:

* :class:`GuardedOutput`: a device output with canary values on every side, so
  a write past its end is caught on a GPU (where nothing raises) as in the
  simulator (which raises ``IndexError``);
* :func:`to_host`: a NumPy copy of a NumPy, CuPy, stand-in or Numba device array;
* :func:`wrong_entries` and :func:`unwritten_entries`: where a result differs
  from its reference, or still holds the fill value nothing wrote over;
* :func:`get_array_module`: the array module an array belongs to.

The reference results themselves live with the problem they solve (the
distance matrix's in :mod:`demos.distance.reference`). Importing this module
changes nothing: no warning filters, no simulator switch, no CuPy or Numba
import (both are imported when first used). It imports nothing else of
``demos``, so both voices can stand on it without standing on each other.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

#: What a guarded buffer holds before a kernel runs: a value no course kernel writes.
CANARY = -12345.0
#: Canary elements on every side of a guarded output, per dimension.
PAD = 32


class GuardedOutput:
    """An output array on the device with *pad* canary elements on every side.

    Pass :attr:`inner` (a view of the real region) to a kernel; :meth:`values`
    copies the real region back, :meth:`canaries_intact` says whether anything
    was written outside it and :meth:`first_write_outside` where. The real
    region starts as *fill* (so :func:`unwritten_entries` finds what no thread
    wrote) or as *initial*. The buffer is a Numba device array, so a write past
    the end of :attr:`inner` lands in the canaries on a GPU too.
    """

    CANARY = CANARY

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: Any = np.float64,
        pad: int = PAD,
        *,
        initial: np.ndarray | None = None,
        fill: float = CANARY,
    ) -> None:
        from numba import cuda

        self.shape, self.pad, self.fill = tuple(shape), pad, float(fill)
        self.region = tuple(slice(pad, pad + s) for s in self.shape)
        self.host = np.full([s + 2 * pad for s in self.shape], fill, dtype=dtype)
        if initial is not None:
            self.host[self.region] = initial
        self.device = cuda.to_device(self.host)
        self.inner = self.device[self.region]

    def whole(self) -> np.ndarray:
        """The whole buffer, canaries included, copied to the host."""
        return self.device.copy_to_host()

    def values(self) -> np.ndarray:
        """The real region, copied to the host."""
        return self.whole()[self.region].copy()

    def first_write_outside(self) -> tuple[int, ...] | None:
        """Index (relative to the real region) of the first canary overwritten, or None."""
        band = self.whole()
        band[self.region] = self.fill
        touched = np.argwhere(band != np.asarray(self.fill, dtype=band.dtype))
        if not touched.size:
            return None
        return tuple(int(v) - self.pad for v in touched[0])

    def canaries_intact(self) -> bool:
        """True if nothing outside the real region was written."""
        return self.first_write_outside() is None


def to_host(array: Any) -> np.ndarray:
    """A NumPy copy of a NumPy, CuPy, stand-in or Numba device array (or anything array-like)."""
    if isinstance(array, np.ndarray):
        return np.array(array, copy=True)
    if hasattr(array, "copy_to_host"):  # a Numba device array
        return array.copy_to_host()
    if hasattr(array, "get"):  # CuPy and the course's stand-ins
        return np.asarray(array.get())
    return np.asarray(array)


def wrong_entries(
    got: np.ndarray,
    expected: np.ndarray,
    rtol: float = 1e-7,
    atol: float = 0.0,
    equal_nan: bool = False,
) -> np.ndarray:
    """Indices (one row each, as ``np.argwhere`` gives) where *got* is not close to *expected*.

    Both must have the same shape; an empty result means the values agree.
    """
    close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return np.argwhere(~close)


def unwritten_entries(got: np.ndarray, fill: float = CANARY) -> np.ndarray:
    """Indices where *got* still holds *fill*: entries of a guarded output no thread wrote."""
    return np.argwhere(got == float(fill))  # a Python float adapts to a float32 got


def get_array_module(*arrays: Any) -> ModuleType:
    """The array module of *arrays*: like ``cupy.get_array_module``, also without CuPy.

    Arrays of a ``cupy`` module get ``cupy.get_array_module``'s answer (CuPy is
    imported only then, so it need not be installed); an array that names its
    module through the array API's ``__array_namespace__`` (the course's CuPy
    stand-in, :mod:`demos.cupy_standin`, does) gets that module; anything else
    gets NumPy.
    """
    if any(type(a).__module__.split(".")[0] == "cupy" for a in arrays):
        try:
            import cupy
        except Exception:  # noqa: BLE001  (a broken CUDA install: NumPy, as without CuPy)
            return np
        return cupy.get_array_module(*arrays)
    for array in arrays:
        if not isinstance(array, np.ndarray) and hasattr(type(array), "__array_namespace__"):
            return array.__array_namespace__()
    return np
