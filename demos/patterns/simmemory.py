"""What uninitialised memory holds in the course's simulator: garbage, not zeros.

A GPU hands a kernel shared memory and registers holding whatever was there
before; NumPy, behind Numba's simulator, mostly hands out zeros, and zeros are
exactly what a sum that reads an element it never set needs to look right. So
every ``cuda.shared.array`` (static, one buffer per call site and block, or the
launch's dynamic shared memory, refilled for each block) and every
``cuda.local.array`` starts as NaN for floats and 0x5A5A for integers, values
that spoil any result they reach. :mod:`demos.patterns.simulator` installs these.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from demos.patterns import simwarp

_lock = threading.Lock()


def _numpy_dtype(dtype: Any) -> np.dtype:
    """A NumPy dtype for a Numba type (``float32``) or anything NumPy understands."""
    from numba.cuda.simulator import kernelapi

    if isinstance(dtype, kernelapi.types.Type):
        return np.dtype(kernelapi.numpy_support.as_dtype(dtype))
    return np.dtype(dtype)


def poisoned(shape: Any, dtype: Any) -> np.ndarray:
    """A new array holding what uninitialised memory might: NaN, or 0x5A5A."""
    buffer = np.empty(shape, _numpy_dtype(dtype))
    buffer.fill(simwarp.undefined_like(buffer.dtype.type(0)))
    return buffer


def shared_buffer(shared: Any, shape: Any, dtype: Any, site: tuple) -> np.ndarray:
    """The buffer of the ``cuda.shared.array`` call at *site* (code, instruction) in this block."""
    block = tuple(threading.current_thread().blockIdx)
    with _lock:
        store = shared.__dict__.setdefault("_course_buffers", {})
        if store.get("block") != block:  # blocks run one after another: a fresh set for each
            store.clear()
            store["block"] = block
        if site not in store:
            store[site] = poisoned(shape, dtype)
        return store[site]


def dynamic_buffer(shared: Any, dtype: Any, original: Any) -> np.ndarray:
    """The launch's dynamic shared memory (``cuda.shared.array(0, dtype)``) as this block sees it.

    The simulator keeps one zero-filled buffer for the whole launch (*original* is its own
    ``array`` method); a GPU gives each block memory holding whatever was there, so the buffer
    is poisoned when a block first asks for it.
    """
    buffer = original(shared, 0, _numpy_dtype(dtype))
    block = tuple(threading.current_thread().blockIdx)
    with _lock:
        if shared.__dict__.get("_course_dynamic_block") != block:
            shared.__dict__["_course_dynamic_block"] = block
            buffer.fill(simwarp.undefined_like(buffer.dtype.type(0)))
    return buffer


def local_array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> np.ndarray:
    """A ``cuda.local.array`` as registers might start: NaN or 0x5A5A, not ``np.empty``'s zeros."""
    return poisoned(shape, dtype)
