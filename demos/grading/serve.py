"""The kernel's side of grading: run the student's code on the grader's inputs, send back data.

The grader never runs its hidden tests here. For each hidden test it sends
requests ("call ``split`` with these arguments") that :func:`handle` answers
with what happened, as plain data (:mod:`demos.grading.wire`): the value
returned, the exception raised, the kernels launched, the course functions
that ran, and the state of the helper objects the grader asked for (the
devices of the multi-GPU assignment, the counting array module of the
profiling one). The grader compares; nothing this module says is trusted, so
a student who changes it only changes the data, never a verdict.

Helper objects are asked for with ``{"$make": kind, ...}`` in the arguments;
see :data:`MAKERS`.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable
from typing import Any

import numpy as np

from demos.grading import sealed, wire

#: Longest error text sent back (the grader shows only its own sentences anyway).
_MAX_ERROR = 300


def _user_namespace() -> dict[str, Any]:
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("not running in a notebook kernel")
    return shell.user_ns


class _Made:
    """The helper objects made for one request, to report their state afterwards."""

    def __init__(self) -> None:
        self.reports: list[Callable[[], Any]] = []

    def device_array(self, spec: dict) -> Any:
        from demos.grading import device_array_module

        self.reports.append(lambda: None)
        return device_array_module().asarray(spec["array"])

    def devices(self, spec: dict) -> Any:
        from demos.grading.devices import devices

        made = devices(int(spec["count"]))
        self.reports.append(sealed.recording_devices(made))
        return made

    def counting_module(self, spec: dict) -> Any:
        from demos.profiling.sync_counter import counting_module

        module, read, self.guard = sealed.counting(counting_module())
        self.reports.append(read)
        return module

    def host_arrays(self, spec: dict) -> Any:
        """Arrays only the counting module made before them in the request reads unnoticed."""
        self.reports.append(lambda: None)
        return [self.guard(array) for array in spec["arrays"]]

    def elementwise(self, spec: dict) -> Any:
        self.reports.append(lambda: None)
        return ELEMENTWISE[spec["name"]]


#: Functions ``f(x, xp)`` the grader can hand to a student's function (``"$make": "elementwise"``).
ELEMENTWISE: dict[str, Callable[[Any, Any], Any]] = {
    "sin_twice": lambda x, xp: xp.sin(x) * 2,
    "exp_plus_square": lambda x, xp: xp.exp(x) + x * x,
}

#: What ``{"$make": kind}`` builds in the kernel.
MAKERS = {
    "device_array": _Made.device_array,
    "devices": _Made.devices,
    "counting_module": _Made.counting_module,
    "host_arrays": _Made.host_arrays,
    "elementwise": _Made.elementwise,
}


def _keras_model(model: Any, images: Any = None, weights: Any = None) -> dict:
    """A Keras model as data: each layer's kind, output shape, parameters and settings, the weights,
    and the logits for *images* when given.

    *weights*, when given, replace the model's own first (``set_weights``), so the
    grader knows every number the forward pass depends on, moving statistics too.
    """
    if weights is not None:
        model.set_weights([np.asarray(w) for w in weights])
    layers = []
    for layer in model.layers:
        config = layer.get_config()
        layers.append(
            {
                "kind": type(layer).__name__,
                "output_shape": list(layer.output.shape),
                "parameters": int(layer.count_params()),
                "activation": config.get("activation"),
                "kernel_size": list(config["kernel_size"]) if "kernel_size" in config else None,
            }
        )
    described = {"layers": layers, "weights": [np.asarray(w) for w in model.get_weights()]}
    if images is not None:
        import keras

        described["logits"] = np.asarray(keras.ops.convert_to_numpy(model(images)))
    return described


#: How a value the grader cannot read as data is described (``"describe": {"as": ...}``).
DESCRIBERS: dict[str, Callable[..., Any]] = {"keras_model": _keras_model}


def _resolve(value: Any, made: _Made) -> Any:
    """Arguments with every ``{"$make": ...}`` replaced by the object it asks for."""
    if isinstance(value, dict):
        if "$make" in value:
            return MAKERS[value["$make"]](made, value)
        return {k: _resolve(v, made) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, made) for v in value]
    if isinstance(value, tuple):
        return tuple(_resolve(v, made) for v in value)
    if isinstance(value, wire.DeviceArray):
        return np.asarray(value).copy()
    return value


def _name_of(obj: Any, namespace: dict[str, Any]) -> str:
    return next(
        (name for name, value in namespace.items() if value is obj), "<not a notebook name>"
    )


def _counting(calls: list[list[int]], function: Callable) -> Callable:
    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(
            [int(getattr(a, "shape", (len(a),))[0]) if hasattr(a, "__len__") else -1 for a in args]
        )
        return function(*args, **kwargs)

    return counted


def _call(request: dict) -> dict:
    from demos.grading.watch import is_course_code, watch

    namespace = _user_namespace()
    name = request["name"]
    if name not in namespace:
        return {"error": f"NameError: {name} is not defined"}
    made = _Made()
    args = _resolve(request.get("args", []), made)
    kwargs = _resolve(request.get("kwargs", {}), made)
    forbidden = tuple(_forbidden(path) for path in request.get("forbidden", []))
    calls: list[list[int]] = []
    counted_name = request.get("count_calls_of")
    saved = namespace.get(counted_name) if counted_name else None
    reply: dict[str, Any] = {"course_code": bool(is_course_code(namespace[name]))}
    with contextlib.ExitStack() as stack:
        if counted_name and saved is not None:
            namespace[counted_name] = _counting(calls, saved)
            stack.callback(namespace.__setitem__, counted_name, saved)
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        seen = stack.enter_context(watch(forbidden=tuple(f for f in forbidden if f is not None)))
        try:
            value = namespace[name](*args, **kwargs)
            describe = request.get("describe")
            if describe:
                value = DESCRIBERS[describe["as"]](
                    value, **{k: v for k, v in describe.items() if k != "as"}
                )
            reply["value"] = value
        except BaseException as error:  # noqa: BLE001  (the student's error is data for the grader)
            reply["error"] = f"{type(error).__name__}: {error}"[:_MAX_ERROR]
    reply["seen"] = {
        "launches": [
            [_name_of(launch.kernel, namespace), list(launch.grid), list(launch.block)]
            for launch in seen.launches
        ],
        "course_calls": list(seen.course_calls),
        "forbidden_calls": list(seen.forbidden_calls),
        "profiler_removed": bool(seen.profiler_removed),
    }
    reply["calls"] = calls
    reply["made"] = [report() for report in made.reports]
    return reply


def _describe(name: str) -> dict:
    """Is *name* defined in the notebook, and is it the course's own code?

    Identity only: a function of the student's that *calls* course code is
    seen doing so at run time (the watch's course calls), in the call itself.
    """
    from demos.grading.watch import is_course_code

    namespace = _user_namespace()
    if name not in namespace:
        return {"defined": False, "course_code": False}
    return {"defined": True, "course_code": bool(is_course_code(namespace[name]))}


def _forbidden(path: str) -> Callable | None:
    module_name, _, attribute = path.rpartition(".")
    module = __import__(module_name, fromlist=["_"])
    return getattr(module, attribute, None)


def handle(text: str) -> str:
    """Answer one request of the grader (text from :func:`wire.dumps`) with text for it.

    The student's kernels run next, on the grader's small inputs: Numba's
    performance advice about that is silenced first (it would only be noise).
    """
    from demos.numba_advice import silence_advice

    silence_advice()
    try:
        request = wire.loads(text)
        if request.get("op") == "describe":
            return wire.dumps(_describe(request["name"]))
        if request.get("op") != "call":
            raise ValueError(f"unknown request {request.get('op')!r}")
        return wire.dumps(_call(request))
    except BaseException as error:  # noqa: BLE001  (whatever happens, the grader gets an answer)
        return wire.dumps({"error": f"{type(error).__name__}: {error}"[:_MAX_ERROR]})
