"""An array module that counts implicit host transfers: where a GPU program waits for the GPU.

CuPy launches work asynchronously, but every time Python needs a *value* of a
device array (``float(x)``, ``x.item()``, ``print(x)``, ``if x > 0:``,
``cp.asnumpy(x)``, ``np.asarray(x)``) the host must wait until the GPU has
finished everything queued before, then copy the value back. One such wait per
loop iteration serialises host and GPU, and is the most common reason a GPU
program is slower than it should be.

:class:`SyncCountingModule` wraps ``numpy`` (on any machine) or ``cupy`` (on a
GPU) and counts these transfers, in Python, the same way on both: a pipeline
that reads a value per iteration is caught on a laptop as on a GPU node. It
behaves like CuPy in one respect that matters: its arrays are not NumPy
arrays, so every way back to the host goes through a counted door.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

#: Methods of an array that hand a value to the host.
_TRANSFER_METHODS = frozenset({"item", "tolist", "get", "tobytes"})
#: Module functions that hand values to the host.
_TRANSFER_FUNCTIONS = frozenset({"asnumpy"})


class SyncCounter:
    """What was counted: host transfers by kind, uploads, and operations run on the device."""

    def __init__(self) -> None:
        self.transfers: Counter = Counter()
        self.uploads = 0
        self.operations = 0

    @property
    def syncs(self) -> int:
        """All implicit synchronisations (each host transfer waits for the device)."""
        return sum(self.transfers.values())

    def reset(self) -> None:
        self.transfers.clear()
        self.uploads = 0
        self.operations = 0


def _unwrap(value: Any) -> Any:
    if isinstance(value, TrackedArray):
        return value._array
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


class TrackedArray:
    """A device array (NumPy or CuPy inside) whose ways back to the host are counted."""

    __slots__ = ("_array", "_counter", "_xp")

    def __init__(self, array: Any, counter: SyncCounter, xp: ModuleType) -> None:
        self._array = array
        self._counter = counter
        self._xp = xp

    def _wrap(self, value: Any) -> Any:
        return _wrap_result(value, self._counter, self._xp)

    def _transfer(self, kind: str) -> Any:
        self._counter.transfers[kind] += 1
        return _to_host(self._array, self._xp)

    # -- ways back to the host: each one counted
    def __float__(self) -> float:
        return float(self._transfer("float"))

    def __int__(self) -> int:
        return int(self._transfer("int"))

    def __index__(self) -> int:
        return operator.index(self._transfer("index"))

    def __bool__(self) -> bool:
        return bool(self._transfer("bool"))

    def __complex__(self) -> complex:
        return complex(self._transfer("complex"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        host = self._transfer("__array__")
        return host if dtype is None else host.astype(dtype)

    def __repr__(self) -> str:
        return f"tracked({self._transfer('repr')!r})"

    def __str__(self) -> str:
        return str(self._transfer("str"))

    def __format__(self, spec: str) -> str:
        return format(self._transfer("format"), spec)

    def __iter__(self):
        self._counter.transfers["iter"] += 1  # iterating reads one element at a time
        return iter(self._wrap(list(self._array)))

    # -- everything else stays on the device
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            # __array_interface__, __cuda_array_interface__, __dlpack__...: handing the raw
            # buffer to another library would be an uncounted way to the host.
            raise AttributeError(name)
        attr = getattr(self._array, name)
        if name in _TRANSFER_METHODS:

            def transfer(*args: Any, **kwargs: Any) -> Any:
                host = self._transfer(name)
                return host if name == "get" else getattr(host, name)(*args, **kwargs)

            return transfer
        if callable(attr):

            def method(*args: Any, **kwargs: Any) -> Any:
                self._counter.operations += 1
                return self._wrap(attr(*_unwrap(args), **_unwrap(kwargs)))

            return method
        return self._wrap(attr)

    def __len__(self) -> int:
        return len(self._array)  # the shape is known on the host: no transfer

    def __getitem__(self, index: Any) -> Any:
        self._counter.operations += 1
        return self._wrap(self._array[_unwrap(index)])

    def __setitem__(self, index: Any, value: Any) -> None:
        self._counter.operations += 1
        self._array[_unwrap(index)] = _unwrap(value)


def _binary(name: str) -> Callable[..., Any]:
    def op(self: TrackedArray, *others: Any) -> Any:
        self._counter.operations += 1
        return self._wrap(getattr(self._array, name)(*_unwrap(others)))

    op.__name__ = name
    return op


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
    "iadd",
    "isub",
    "imul",
    "itruediv",
]:
    setattr(TrackedArray, f"__{_name}__", _binary(f"__{_name}__"))
TrackedArray.__hash__ = None  # type: ignore[assignment]  (arrays are not hashable)


def _to_host(array: Any, xp: ModuleType) -> Any:
    if xp is np:
        return np.array(array, copy=True) if isinstance(array, np.ndarray) else array
    return xp.asnumpy(array) if hasattr(array, "__cuda_array_interface__") else array


def _wrap_result(value: Any, counter: SyncCounter, xp: ModuleType) -> Any:
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__cuda_array_interface__"):
        return TrackedArray(value, counter, xp)
    if isinstance(value, tuple):
        return tuple(_wrap_result(v, counter, xp) for v in value)
    if isinstance(value, list):
        return [_wrap_result(v, counter, xp) for v in value]
    return value


class SyncCountingModule:
    """``numpy`` or ``cupy`` behind a counter: use it as ``xp`` and read :attr:`counter`.

    ``xp.asarray(host)`` is counted as an upload; ``xp.asnumpy(a)`` and every
    implicit transfer of a tracked array as a sync; any other function runs on
    the wrapped module and returns tracked arrays.
    """

    def __init__(self, base: ModuleType | None = None) -> None:
        self._base = np if base is None else base
        self._counter = SyncCounter()

    @property
    def counter(self) -> SyncCounter:
        """What was counted so far."""
        return self._counter

    @property
    def __name__(self) -> str:
        return f"sync-counting {self._base.__name__}"

    def asarray(self, value: Any, *args: Any, **kwargs: Any) -> TrackedArray:
        if isinstance(value, TrackedArray):
            return self._wrap(self._base.asarray(value._array, *args, **kwargs))
        self._counter.uploads += 1
        host = np.array(value, copy=True) if self._base is np else value  # a real copy, as to a GPU
        return self._wrap(self._base.asarray(host, *args, **kwargs))

    array = asarray

    def asnumpy(self, value: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        self._counter.transfers["asnumpy"] += 1
        return _to_host(_unwrap(value), self._base)

    def _wrap(self, value: Any) -> Any:
        return _wrap_result(value, self._counter, self._base)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._base, name)
        if name in _TRANSFER_FUNCTIONS:
            return self.asnumpy
        if isinstance(attr, ModuleType) or not callable(attr) or isinstance(attr, type):
            return attr  # constants (pi, float32), submodules and dtypes pass through

        def function(*args: Any, **kwargs: Any) -> Any:
            self._counter.operations += 1
            return self._wrap(attr(*_unwrap(args), **_unwrap(kwargs)))

        function.__name__ = name
        return function


def counting_module() -> SyncCountingModule:
    """The stand-in for this machine: CuPy inside where it can use a GPU, NumPy elsewhere."""
    from demos import hardware

    return SyncCountingModule(
        hardware.require_cupy("counting_module") if hardware.cupy_available() else np
    )
