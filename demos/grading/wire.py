"""Plain data between the grader and a notebook's kernel: JSON with NumPy arrays.

The grader decides hidden-test verdicts in its own process and asks the
student's kernel only to *run* the student's code on inputs it sends. What
comes back is untrusted, so it must be data and nothing else: numbers,
strings, lists, dicts and NumPy arrays (saved with ``allow_pickle=False``).
An object that is none of these (say, one whose ``__eq__`` always answers
True) cannot cross: it arrives as an :class:`Opaque` that equals nothing.

Both sides use this one module. The kernel side only ever *writes* replies
and reads requests the grader wrote; the grader side reads replies with
:func:`loads`, which checks sizes and types and never runs code from them.
"""

from __future__ import annotations

import base64
import io
import json
import math
from typing import Any

import numpy as np

#: Largest reply the grader reads (bytes of JSON): far above any test's data.
MAX_TEXT = 64 * 2**20
#: Deepest nesting of lists and dicts accepted.
MAX_DEPTH = 32

_ARRAY, _KIND, _OPAQUE, _TUPLE, _FLOAT = "$ndarray", "$kind", "$opaque", "$tuple", "$float"


class WireError(ValueError):
    """The text is not a reply of the expected form (too large, malformed, unexpected types)."""


class Opaque:
    """Stands for a value the kernel could not send as data; equal to nothing, not even itself."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<{self.type_name} (not plain data)>"


class Marker(dict):
    """A request to the other side to build something (``{"$make": "devices", "count": 3}``).

    Only the grader writes these; a ``$`` key in anything else is refused.
    """


class DeviceArray(np.ndarray):
    """A NumPy copy of an array that lived on the device (CuPy, or the stand-in) in the kernel."""


def _array_kind(value: Any) -> str | None:
    if type(value) is np.ndarray:
        return "host"
    if type(value) is DeviceArray:
        return "device"
    module = type(value).__module__
    if hasattr(value, "get") and (module.startswith("cupy") or module == "demos.cupy_standin"):
        return "device"
    return None


def _encode_array(array: np.ndarray, kind: str) -> dict[str, str]:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array, order="C").view(np.ndarray), allow_pickle=False)
    return {_ARRAY: base64.b64encode(buffer.getvalue()).decode("ascii"), _KIND: kind}


def to_plain(value: Any, depth: int = 0) -> Any:
    """*value* as JSON-ready data; anything that is not plain data becomes an opaque marker."""
    if depth > MAX_DEPTH:
        return {_OPAQUE: "too deeply nested"}
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {_FLOAT: repr(value)}
    if type(value) is Marker:
        return {k: to_plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        return _encode_array(np.asarray(value), "scalar")
    kind = _array_kind(value)
    if kind == "host":
        return _encode_array(value, kind)
    if kind == "device":
        host = value.get() if hasattr(value, "get") and type(value) is not DeviceArray else value
        if type(host) is np.ndarray or type(host) is DeviceArray:
            return _encode_array(host, "device")
        return {_OPAQUE: type(value).__name__}
    if type(value) in (list, tuple):
        items = [to_plain(v, depth + 1) for v in value]
        return {_TUPLE: items} if type(value) is tuple else items
    if type(value) is dict and all(type(k) is str and not k.startswith("$") for k in value):
        return {k: to_plain(v, depth + 1) for k, v in value.items()}
    return {_OPAQUE: type(value).__name__}


def dumps(value: Any) -> str:
    """*value* as text for the other side (see :func:`to_plain`)."""
    return json.dumps(to_plain(value), allow_nan=False)


def _decode_array(text: Any, kind: Any) -> Any:
    if not isinstance(text, str) or kind not in ("host", "device", "scalar"):
        raise WireError("malformed array")
    try:
        array = np.load(io.BytesIO(base64.b64decode(text, validate=True)), allow_pickle=False)
    except (ValueError, OSError) as error:
        raise WireError(f"malformed array ({error})") from None
    if array.dtype.hasobject or array.dtype.fields is not None:
        raise WireError("arrays must have a plain numeric dtype")
    if kind == "scalar":
        return array[()]
    return array.view(DeviceArray) if kind == "device" else array


def from_plain(value: Any, depth: int = 0) -> Any:
    """The values :func:`to_plain` made, checked: nothing but data is ever built."""
    if depth > MAX_DEPTH:
        raise WireError("too deeply nested")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is list:
        return [from_plain(v, depth + 1) for v in value]
    if type(value) is not dict:
        raise WireError(f"unexpected {type(value).__name__}")
    if _FLOAT in value:
        if value[_FLOAT] not in ("nan", "inf", "-inf"):
            raise WireError("malformed float")
        return float(value[_FLOAT])
    if _ARRAY in value:
        return _decode_array(value[_ARRAY], value.get(_KIND))
    if _TUPLE in value:
        items = value[_TUPLE]
        if type(items) is not list:
            raise WireError("malformed tuple")
        return tuple(from_plain(v, depth + 1) for v in items)
    if _OPAQUE in value:
        return Opaque(str(value[_OPAQUE])[:80])
    return {str(k): from_plain(v, depth + 1) for k, v in value.items()}


def loads(text: Any) -> Any:
    """Data from the other side's text; :class:`WireError` unless :func:`dumps` wrote it."""
    if not isinstance(text, str):
        raise WireError("a reply must be text")
    if len(text) > MAX_TEXT:
        raise WireError(f"the reply is larger than {MAX_TEXT // 2**20} MB")
    try:
        plain = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise WireError(f"the reply is not JSON ({error})") from None
    return from_plain(plain)
