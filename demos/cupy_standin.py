"""A CPU stand-in for CuPy: "GPU arrays" made of NumPy, for checks and graders without a GPU.

Without a GPU, code for CuPy would only ever be handed NumPy arrays, so an
answer that works for NumPy alone (``np.asarray(x)``, a loop over host values,
a whole matrix copied back) would pass on a laptop and fail on a GPU node. The
chapters' checks (:mod:`demos.checks`) and the assignments (:mod:`demos.grading`)
hand such code these arrays instead, which behave like CuPy's where it trips:

* a :class:`DeviceArray` is **not** a ``numpy.ndarray`` (``isinstance`` tells
  them apart, exactly as for ``cupy.ndarray``);
* turning one into a NumPy array implicitly (``np.asarray(a)``, storing it into
  a NumPy array) raises ``TypeError`` as CuPy does; ``a.get()`` and
  :func:`asnumpy` copy explicitly;
* NumPy functions and ufuncs called on device arrays dispatch to this module
  (CuPy implements ``__array_function__`` too), so ``np.einsum(a, a)`` gives a
  device array here as it gives a CuPy array there, while ``np.empty(...)``
  still makes a host array; a chapter's check may ask :func:`standing_in` to
  refuse them instead (*strict*), to teach code that names its array module;
* mixing a device array with a NumPy array (not a scalar) raises ``TypeError``;
* every copy to the host (``.get()``, :func:`asnumpy`, ``float()``, ``.item()``,
  ``.tolist()``, a condition) is recorded in :data:`transfers` with its shape.

:data:`module` is the array module (``xp``) of these arrays; the course's
``get_array_module`` (:func:`demos.kernel_testing.get_array_module`) finds it
through the array API's ``__array_namespace__``, and type-based detectors
(:func:`demos.validation.array_library`) through :attr:`DeviceArray.stand_in_for`.
:func:`standing_in` makes ``import cupy`` give :data:`module` while a student
function runs. Streams, events, pinned memory and graphs (``xp.cuda``) are in
:mod:`demos.cupy_standin_streams`, which logs what was issued on which stream.
Importing this module imports nothing else of ``demos``.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from demos import cupy_standin_streams as _streams

_MIXING = "the stand-in GPU arrays cannot be mixed with NumPy arrays (as with CuPy): use xp.asarray"
_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed (as with CuPy). "
    "Please use .get() to construct a NumPy array explicitly."
)
#: (how, shape) of every copy to the host made inside the last :func:`standing_in`.
transfers: list[tuple[str, tuple[int, ...]]] = []
_recording = [False]  # only inside standing_in: a grader's copies are not kept forever
_strict = [False]  # inside standing_in(strict=True): NumPy's own functions refuse device arrays


def _numpy_called(func: Any, arrays: tuple) -> None:
    """Refuse NumPy's *func* on device arrays when strict (an operator with a scalar is fine)."""
    if _strict[0] and all(isinstance(a, DeviceArray) for a in arrays):
        name = getattr(func, "__name__", "a function")
        raise TypeError(f"Unsupported type: NumPy's {name} was handed a GPU array")


class DeviceArray:
    """An array "on the device": a NumPy array that NumPy code cannot use implicitly."""

    __slots__ = ("_data",)
    __array_priority__ = 100
    #: The library this type stands in for, as :func:`demos.validation.array_library` names it.
    stand_in_for = "cupy"

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(_IMPLICIT)

    def _to_host(self, how: str) -> np.ndarray:
        _streams.get_current_stream().synchronize()  # a value on the host waits for the GPU
        if _recording[0]:
            transfers.append((how, tuple(self._data.shape)))
        return np.array(self._data, copy=True)

    def get(
        self,
        stream: Any = None,
        order: str = "C",
        out: np.ndarray | None = None,
        blocking: bool = True,
    ) -> np.ndarray:
        """A NumPy copy on the host, like ``cupy.ndarray.get``: asynchronous only into pinned
        *out* with ``blocking=False``, on *stream* (default: the current one)."""
        if out is None:
            _streams.issue("copy out", lambda: None, stream, pinned=False, asynchronous=False)
            return self._to_host(".get()")  # the host waits for the copy
        if out.shape != self._data.shape:
            raise ValueError(f"Shape mismatch. Old shape: {out.shape}, new shape: {self.shape}")
        pinned = isinstance(out, _streams.PinnedArray)
        _streams.issue(
            "copy out",
            lambda data=self._data: np.copyto(out, data),
            stream,
            pinned=pinned,
            asynchronous=pinned and not blocking,
            host=_address(out),
        )
        _streams.hold(out)
        if blocking:
            (stream or _streams.get_current_stream()).synchronize()
        return out

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """Copy host *arr* in, like ``cupy.ndarray.set`` (CuPy 13 and later): on *stream*, default
        the current one; the host goes on at once only when *arr* is pinned."""
        if isinstance(arr, DeviceArray) or not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if arr.shape != self._data.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        pinned = isinstance(arr, _streams.PinnedArray)
        target = stream or _streams.get_current_stream()
        _streams.issue(
            "copy in",
            lambda data=self._data: np.copyto(data, arr, casting="unsafe"),
            target,
            pinned=pinned,
            asynchronous=pinned,
            host=_address(arr),
            device=id(self._data),
        )
        _streams.hold(arr, self._data)
        if not pinned:
            target.synchronize()  # from pageable memory the host waits for the copy

    def item(self) -> Any:
        return self._to_host(".item()").item()

    def tolist(self) -> Any:
        return self._to_host(".tolist()").tolist()

    def __float__(self) -> float:
        return float(self._to_host("float()"))

    def __int__(self) -> int:
        return int(self._to_host("int()"))

    def __index__(self) -> int:
        return self._to_host("an index").__index__()

    def __bool__(self) -> bool:
        return bool(self._to_host("a condition"))

    def __array_namespace__(self, api_version: Any = None) -> types.ModuleType:
        """:data:`module`: how :func:`demos.kernel_testing.get_array_module` finds it."""
        return module

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _numpy_called(ufunc, inputs)
        return _call(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func: Callable, types_: Any, args: Any, kwargs: Any) -> Any:
        _numpy_called(func, tuple(a for a in args if isinstance(a, (DeviceArray, np.ndarray))))
        return _call(func, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # no __array_interface__ & co: NumPy must not see the data
            raise AttributeError(name)
        value = getattr(self._data, name)
        if callable(value):
            return lambda *args, **kwargs: _call(value, args, kwargs)
        return _wrap(value)

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._data[_unwrap(key, host_ok=True)])  # host indices: CuPy copies them

    def __setitem__(self, key: Any, value: Any) -> None:
        # CuPy copies host data into part of an array, but a whole-array store
        # (``a[:] = host`` or ``a[...] = host``) goes through ``fill``, which
        # refuses a non-scalar NumPy array with ValueError (seen with CuPy 14).
        whole = key is Ellipsis or key == slice(None)
        if whole and isinstance(value, np.ndarray) and value.ndim > 0:
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        data, where, new = self._data, _unwrap(key, host_ok=True), _unwrap(value, host_ok=True)
        if _streams.capturing_stream() is not None:  # a copy kernel: recorded, run at launch
            _streams.issue("array op", lambda: data.__setitem__(where, new))
            return
        data[where] = new

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return (_wrap(item) for item in self._data)

    def __repr__(self) -> str:
        return f"stand-in GPU array({np.array2string(self._data)})"

    @property
    def T(self) -> DeviceArray:
        return DeviceArray(self._data.T)


_IN_PLACE = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__"}


def _operator(name: str) -> Callable:
    def method(self: DeviceArray, *args: Any) -> Any:
        if name in _IN_PLACE and _streams.capturing_stream() is not None:
            data, plain = self._data, _unwrap(args)  # recorded now, run at each graph launch
            _streams.issue("array op", lambda: getattr(data, name)(*plain))
            return self
        return _call(getattr(self._data, name), args, {})

    method.__name__ = name
    return method


for _name in (
    "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul "
    "rmatmul neg pos abs lt le gt ge eq ne and rand or ror xor rxor invert iadd isub imul "
    "itruediv ipow"
).split():
    setattr(DeviceArray, f"__{_name}__", _operator(f"__{_name}__"))
DeviceArray.__hash__ = None  # type: ignore[assignment]  (arrays are not hashable)


def _unwrap(value: Any, host_ok: bool = False) -> Any:
    if isinstance(value, DeviceArray):
        return value._data
    if isinstance(value, np.ndarray) and value.ndim > 0 and not host_ok:
        raise TypeError(_MIXING)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, host_ok) for v in value)
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


def _address(host: np.ndarray) -> int:
    return int(host.__array_interface__["data"][0])


def _copies(value: Any) -> Any:
    """*value* with every NumPy array in it copied: a trial run that writes nothing real."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(_copies(v) for v in value)
    return value


def _call(func: Callable, args: Any, kwargs: dict) -> Any:
    """Run a NumPy function on the data behind device arrays; the results are device arrays.

    It is a kernel on the current stream; while that stream captures, the kernel is recorded
    into the graph and its result is a device array that only a launch of the graph fills."""
    kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
    plain = _unwrap(tuple(args))
    if _streams.capturing_stream() is None:
        result = _wrap(func(*plain, **kwargs))
        _streams.issue("array op", lambda: None)
        return result
    out = kwargs.get("out")
    if out is None and isinstance(func, np.ufunc) and len(plain) > func.nin:
        out = plain[func.nin]  # np.multiply(x, 0.5, x): out given by position
    if out is not None:  # into an array made before: record, run at launch
        _streams.issue("array op", lambda: func(*plain, **kwargs))
        return _wrap(out[0] if isinstance(out, tuple) and len(out) == 1 else out)
    trial = func(*_copies(plain), **_copies(kwargs))  # shape and dtype; nothing real written
    if trial is None:  # it writes into an argument (np.copyto): record, run at launch
        _streams.issue("array op", lambda: func(*plain, **kwargs))
        return None
    shape_of = np.asarray(trial)  # the values come at launch
    holder = (
        np.full_like(shape_of, np.nan) if shape_of.dtype.kind in "fc" else np.zeros_like(shape_of)
    )

    def run() -> None:
        holder[...] = func(*plain, **kwargs)

    _streams.issue("array op", run)
    return DeviceArray(holder)


def asarray(value: Any, dtype: Any = None) -> DeviceArray:
    """Copy host data to the "device" (like ``cupy.asarray``), on the current stream."""
    if isinstance(value, DeviceArray):
        return value if dtype is None else DeviceArray(value._data.astype(dtype))
    pinned = isinstance(value, _streams.PinnedArray)
    data = np.array(value, dtype=dtype, copy=True).view(np.ndarray)
    host = _address(value) if isinstance(value, np.ndarray) else None
    _streams.issue(
        "copy in", lambda: None, pinned=pinned, asynchronous=pinned, host=host, device=id(data)
    )
    _streams.hold(value, data)
    return DeviceArray(data)


def asnumpy(
    value: Any, stream: Any = None, order: str = "C", out: Any = None, *, blocking: bool = True
) -> np.ndarray:
    """Copy device data to the host (like ``cupy.asnumpy``: into *out* on *stream* if given)."""
    if not isinstance(value, DeviceArray):
        return np.asarray(value)
    if stream is None and out is None and blocking:
        return value._to_host("asnumpy()")
    return value.get(stream=stream, order=order, out=out, blocking=blocking)


def get_array_module(*arrays: Any) -> types.ModuleType:
    """This module if any argument is a device array, else NumPy."""
    return module if any(isinstance(a, DeviceArray) for a in arrays) else np


class _StandinModule(types.ModuleType):
    """``xp`` for device arrays: NumPy's functions, taking and giving device arrays."""

    ndarray = DeviceArray
    cuda = _streams.cuda  # streams, events, graphs: a log of what went where, no clock
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
module = _StandinModule("CuPy stand-in", "NumPy behind a CuPy-like interface, without a GPU.")


@contextlib.contextmanager
def standing_in(function: Callable, strict: bool = False) -> Iterator[None]:
    """While *function* runs, ``import cupy`` and the ``cupy`` it imported give :data:`module`.

    :data:`transfers` starts empty, so afterwards it lists what *function* copied to the host.
    With *strict*, NumPy's functions and ufuncs refuse device arrays (``TypeError``).
    """
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
    _recording[0], _strict[0] = True, strict
    try:
        yield
    finally:
        _recording[0] = _strict[0] = False
        if real is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = real
        names.update(swapped)
