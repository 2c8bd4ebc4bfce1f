"""A CPU stand-in for CuPy, so that CuPy checks count the same on every grader.

On a GPU node the assignments hand student functions CuPy arrays and check
that CuPy comes back. Without a GPU they used to skip that check, so an answer
that only works for NumPy scored more on a laptop than on a GPU node. This
module imitates the parts of CuPy's behaviour that such answers trip over:

* a :class:`DeviceArray` is **not** a ``numpy.ndarray`` (``isinstance`` tells
  them apart, exactly as for ``cupy.ndarray``);
* turning one into a NumPy array implicitly (``np.asarray(a)``, storing it
  into a NumPy array) raises ``TypeError``, as CuPy does; ``a.get()`` and
  :func:`asnumpy` copy explicitly;
* NumPy functions and ufuncs called on device arrays dispatch to this module
  (CuPy implements ``__array_function__`` too), so ``np.einsum(a, a)`` gives a
  device array here as it gives a CuPy array there, while ``np.empty(...)``
  still makes a host array;
* mixing a device array with a NumPy array (not a scalar) raises ``TypeError``.

:data:`module` is the array module (``xp``) for these arrays.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

_MIXING = "the stand-in GPU arrays cannot be mixed with NumPy arrays (as with CuPy): use xp.asarray"


class DeviceArray:
    """An array "on the device": a NumPy array that NumPy code cannot use implicitly."""

    __slots__ = ("_data",)
    __array_priority__ = 100

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    # What CuPy refuses: implicit conversion to NumPy.
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed (as with CuPy). "
            "Please use .get() to construct a NumPy array explicitly."
        )

    def get(self) -> np.ndarray:
        """A NumPy copy on the host, like ``cupy.ndarray.get``."""
        return np.array(self._data, copy=True)

    def __array_namespace__(self, api_version: Any = None) -> types.ModuleType:
        """:data:`module`: how :func:`demos.kernel_testing.get_array_module` finds it."""
        return module

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _call(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func: Callable, types_: Any, args: Any, kwargs: Any) -> Any:
        return _call(func, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # no __array_interface__ & co: NumPy must not see the data
            raise AttributeError(name)
        value = getattr(self._data, name)
        if callable(value):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return _wrap(value)

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._data[_unwrap(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        # CuPy copies host data into part of an array, but a whole-array store
        # (``a[:] = host`` or ``a[...] = host``) goes through ``fill``, which
        # refuses a non-scalar NumPy array with ValueError (seen with CuPy 14).
        whole = key is Ellipsis or key == slice(None)
        if whole and isinstance(value, np.ndarray) and value.ndim > 0:
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._data[_unwrap(key)] = value._data if isinstance(value, DeviceArray) else value

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Any:
        return (_wrap(item) for item in self._data)

    def __repr__(self) -> str:
        return f"stand-in GPU array({np.array2string(self._data)})"

    def __float__(self) -> float:
        return float(self._data)

    def __int__(self) -> int:
        return int(self._data)

    def __index__(self) -> int:
        return self._data.__index__()

    def __bool__(self) -> bool:
        return bool(self._data)

    @property
    def T(self) -> DeviceArray:
        return DeviceArray(self._data.T)


def _operator(name: str) -> Callable:
    def method(self: DeviceArray, *args: Any) -> Any:
        return _call(getattr(self._data, name), args, {})

    method.__name__ = name
    return method


for _name in [
    "add",
    "radd",
    "sub",
    "rsub",
    "mul",
    "rmul",
    "truediv",
    "rtruediv",
    "floordiv",
    "rfloordiv",
    "mod",
    "rmod",
    "pow",
    "rpow",
    "matmul",
    "rmatmul",
    "neg",
    "pos",
    "abs",
    "lt",
    "le",
    "gt",
    "ge",
    "eq",
    "ne",
    "and",
    "rand",
    "or",
    "ror",
    "xor",
    "rxor",
    "invert",
]:
    setattr(DeviceArray, f"__{_name}__", _operator(f"__{_name}__"))
for _name in ["iadd", "isub", "imul", "itruediv", "ipow"]:
    setattr(DeviceArray, f"__{_name}__", _operator(f"__{_name}__"))
DeviceArray.__hash__ = None  # type: ignore[assignment]  (arrays are not hashable)


def _is_host_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.ndim > 0


def _unwrap(value: Any) -> Any:
    if isinstance(value, DeviceArray):
        return value._data
    if _is_host_array(value):
        raise TypeError(_MIXING)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    return value


def _wrap(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return DeviceArray(value)
    if isinstance(value, np.generic):  # CuPy gives 0-d arrays where NumPy gives scalars
        return DeviceArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _call(func: Callable, args: Any, kwargs: dict) -> Any:
    """Run a NumPy function on the data behind device arrays; the results are device arrays."""
    kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
    return _wrap(func(*_unwrap(tuple(args)), **kwargs))


def asarray(value: Any, dtype: Any = None) -> DeviceArray:
    """Copy host data to the "device" (like ``cupy.asarray``)."""
    if isinstance(value, DeviceArray):
        return value if dtype is None else DeviceArray(value._data.astype(dtype))
    return DeviceArray(np.array(value, dtype=dtype, copy=True))


def asnumpy(value: Any) -> np.ndarray:
    """Copy device data to the host (like ``cupy.asnumpy``)."""
    return value.get() if isinstance(value, DeviceArray) else np.asarray(value)


def get_array_module(*arrays: Any) -> types.ModuleType:
    """This module if any argument is a device array, else NumPy."""
    return module if any(isinstance(a, DeviceArray) for a in arrays) else np


class _StandinModule(types.ModuleType):
    """``xp`` for device arrays: NumPy's functions, taking and giving device arrays."""

    ndarray = DeviceArray
    asarray = staticmethod(asarray)
    array = staticmethod(asarray)
    asnumpy = staticmethod(asnumpy)
    get_array_module = staticmethod(get_array_module)

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if callable(value) and not isinstance(value, type):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return value  # dtypes, constants (xp.float32, xp.pi, xp.newaxis)


#: The array module of :class:`DeviceArray` (the stand-in for ``cupy``).
module = _StandinModule("standin_cupy", "NumPy behind a CuPy-like interface, for CPU graders.")
