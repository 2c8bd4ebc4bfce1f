"""A CuPy-like array module for chapter 3's checks: GPU arrays, and what travels to the host, on
any machine.

Without a GPU, chapter 3's checks would only ever hand the student's function
NumPy arrays, so code that works for NumPy alone (``np.asarray(x)``, a loop over
host values) or that copies a whole matrix back to the host passed. This module
gives "GPU arrays" that behave like CuPy's where such code trips, and counts
every copy to the host:

* a :class:`GpuLikeArray` is not a ``numpy.ndarray``; NumPy refuses it
  (implicit conversion raises ``TypeError`` as with CuPy) and so do NumPy's
  functions and ufuncs: the function must use the array's own module, as
  ``xp = get_array_module(x)`` gives it;
* :data:`module` is that module (``xp``): NumPy's functions on these arrays;
* ``.get()``, ``xp.asnumpy``, ``float()``, ``.item()`` and ``.tolist()`` are
  copies to the host, recorded in :data:`transfers` with their size.

:func:`standing_in` makes ``import cupy``, ``cupy.get_array_module`` and the
course's ``get_array_module`` answer with this module while a student function runs.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

_MIXING = "Unsupported type <class 'numpy.ndarray'>: a GPU array and a NumPy array don't mix"
_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly."
)
transfers: list[tuple[str, tuple[int, ...]]] = []  # (how, shape) of every copy to the host


class GpuLikeArray:
    """An array "on the GPU": NumPy data that NumPy code cannot touch implicitly."""

    __slots__ = ("_data",)
    __array_ufunc__ = None  # NumPy's ufuncs refuse it; `host + gpu` asks the GPU array

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(_IMPLICIT)

    def _to_host(self, how: str) -> np.ndarray:
        transfers.append((how, tuple(self._data.shape)))
        return np.array(self._data, copy=True)

    def get(self) -> np.ndarray:
        return self._to_host(".get()")

    def item(self) -> Any:
        return self._to_host(".item()").item()

    def tolist(self) -> Any:
        return self._to_host(".tolist()").tolist()

    def __float__(self) -> float:
        return float(self._to_host("float()"))

    def __int__(self) -> int:
        return int(self._to_host("int()"))

    def __index__(self) -> int:
        return int(self._to_host("an index"))

    def __bool__(self) -> bool:
        return bool(self._to_host("a condition"))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # no __array_interface__ & co: NumPy must not see the data
            raise AttributeError(name)
        value = getattr(self._data, name)
        if callable(value):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return _wrap(value)

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._data[_unwrap(key, host_ok=True)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[_unwrap(key, host_ok=True)] = _unwrap(value, host_ok=True)

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return (_wrap(item) for item in self._data)

    def __repr__(self) -> str:
        return f"GPU-like array({np.array2string(self._data)})"

    @property
    def T(self) -> GpuLikeArray:
        return GpuLikeArray(self._data.T)


def _operator(name: str) -> Callable:
    def method(self: GpuLikeArray, *args: Any) -> Any:
        return _call(getattr(self._data, name), args, {})

    method.__name__ = name
    return method


for _name in (
    "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul "
    "rmatmul neg pos abs lt le gt ge eq ne and rand or ror xor rxor invert iadd isub imul "
    "itruediv ipow"
).split():
    setattr(GpuLikeArray, f"__{_name}__", _operator(f"__{_name}__"))
GpuLikeArray.__hash__ = None  # type: ignore[assignment]  (arrays are not hashable)
GpuLikeArray.__module__ = "cupy._course_stand_in"  # what CuPy detectors look at


def _unwrap(value: Any, host_ok: bool = False) -> Any:
    if isinstance(value, GpuLikeArray):
        return value._data
    if isinstance(value, np.ndarray) and value.ndim > 0 and not host_ok:
        raise TypeError(_MIXING)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, host_ok) for v in value)
    return value


def _wrap(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return GpuLikeArray(value)
    if isinstance(value, np.generic):  # CuPy gives 0-d arrays where NumPy gives scalars
        return GpuLikeArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    return value


def _call(func: Callable, args: Any, kwargs: dict) -> Any:
    kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
    return _wrap(func(*_unwrap(tuple(args)), **kwargs))


def asarray(value: Any, dtype: Any = None) -> GpuLikeArray:
    """Copy host data to the "GPU" (like ``cupy.asarray``)."""
    if isinstance(value, GpuLikeArray):
        return value if dtype is None else GpuLikeArray(value._data.astype(dtype))
    return GpuLikeArray(np.array(value, dtype=dtype, copy=True))


def asnumpy(value: Any) -> np.ndarray:
    """Copy to the host (like ``cupy.asnumpy``)."""
    return value._to_host("asnumpy()") if isinstance(value, GpuLikeArray) else np.asarray(value)


def get_array_module(*arrays: Any) -> types.ModuleType:
    """This module if any argument is a GPU-like array, else NumPy."""
    return module if any(isinstance(a, GpuLikeArray) for a in arrays) else np


class _Module(types.ModuleType):
    ndarray = GpuLikeArray
    asarray = staticmethod(asarray)
    array = staticmethod(asarray)
    asnumpy = staticmethod(asnumpy)
    get_array_module = staticmethod(get_array_module)

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if callable(value) and not isinstance(value, type):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return value  # dtypes and constants: xp.float32, xp.inf, xp.newaxis


#: The array module of :class:`GpuLikeArray` (``xp``).
module = _Module("CuPy stand-in", "CuPy-like GPU arrays made of NumPy, for the chapter checks.")


@contextlib.contextmanager
def standing_in(function: Callable) -> Iterator[None]:
    """While *function* runs, ``import cupy`` and the ``cupy`` it imported give :data:`module`."""
    real = sys.modules.get("cupy")
    names = getattr(function, "__globals__", {})
    swapped = {}
    for key, value in list(names.items()):
        if real is not None and value is real:
            swapped[key] = value
            names[key] = module
        elif str(getattr(value, "__module__", "")).startswith("cupy") and callable(value):
            replacement = getattr(module, getattr(value, "__name__", ""), None)
            if replacement is not None and not isinstance(value, type):
                swapped[key] = value
                names[key] = replacement
    sys.modules["cupy"] = module
    transfers.clear()
    try:
        yield
    finally:
        if real is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = real
        names.update(swapped)
