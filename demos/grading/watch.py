"""Did the student do the work? Watching a call of the student's code.

:func:`watch` runs code and records what it did that a grader cares about:

* every Numba CUDA kernel it configured for a launch, with grid and block
  (on a GPU and in the simulator alike), so a test can check that the work was
  done by the student's own kernel with a grid that covers the output;
* every function of the course package (``demos``, except this grading
  package and the kernel-testing core it stands on) that ran, even through a
  wrapper or an alias, so importing the course's own solution does not pass;
* every call of a forbidden function (e.g. ``np.array_split``).

:func:`is_course_code` tells whether a function or kernel *is* the course's,
and :class:`GuardedOutput` puts canary values around an output on the device,
so out-of-bounds writes are caught on a GPU as well as in the simulator.
Watching and guarded outputs come just before a student's kernels launch on
test-sized grids, so both silence Numba's performance advice (on stderr it
would cost a graded cell its points); importing this module silences nothing.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import demos
from demos import cupy_standin, cupy_standin_streams, kernel_testing
from demos.numba_advice import silence_advice

_DEMOS_DIR = str(Path(demos.__file__).resolve().parent)
#: Modules of ``demos`` that hold no answers: the tools tests use, which student code may call
#: (the CuPy stand-in with its stream log, and the kernel-testing core).
_TOOLS = (kernel_testing, cupy_standin, cupy_standin_streams)
_TOOL_PATHS = (
    str(Path(__file__).resolve().parent),
    *(str(Path(tool.__file__).resolve()) for tool in _TOOLS),
)
_TOOL_MODULES = ("demos.grading", *(tool.__name__ for tool in _TOOLS))


def tool_sources() -> list[str]:
    """The files of ``demos`` that graded code may run (this package and the tools), relative
    to the repository: what a grading benchmark's provenance covers besides ``grader``."""
    root = Path(demos.__file__).resolve().parent.parent
    return [str(Path(path).relative_to(root)) for path in _TOOL_PATHS]


def _is_tool_module(name: str) -> bool:
    return any(name == tool or name.startswith(tool + ".") for tool in _TOOL_MODULES)


def _is_course_file(filename: str) -> bool:
    return filename.startswith(_DEMOS_DIR) and not filename.startswith(_TOOL_PATHS)


@dataclass
class Launch:
    """One kernel configured for a launch: ``kernel[grid, block]``."""

    kernel: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    @property
    def threads(self) -> tuple[int, int, int]:
        """Threads per dimension (x, y, z) of the whole grid."""
        return tuple(g * b for g, b in zip(self.grid, self.block))  # type: ignore[return-value]


@dataclass
class Watched:
    """What :func:`watch` saw."""

    launches: list[Launch] = field(default_factory=list)
    course_calls: list[str] = field(default_factory=list)
    forbidden_calls: list[str] = field(default_factory=list)
    profiler_removed: bool = False


def _dims(value: Any) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in value) if isinstance(value, (tuple, list)) else (int(value),)
    return (dims + (1, 1, 1))[:3]  # type: ignore[return-value]


def _python_function(obj: Any) -> Any:
    """The Python function behind a kernel, partial or wrapper (``None`` if there is none)."""
    for _ in range(10):
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif hasattr(obj, "py_func"):  # a Numba dispatcher on a GPU
            obj = obj.py_func
        elif hasattr(obj, "fn") and callable(obj.fn):  # a kernel in the CUDA simulator
            obj = obj.fn
        elif hasattr(obj, "__wrapped__"):
            obj = obj.__wrapped__
        else:
            break
    return obj if hasattr(obj, "__code__") else None


def is_course_code(obj: Any) -> bool:
    """True if *obj* (function, kernel, class) comes from the course package, not the notebook."""
    module = getattr(obj, "__module__", None) or ""
    if (module == "demos" or module.startswith("demos.")) and not _is_tool_module(module):
        return True
    function = _python_function(obj)
    if function is None:
        return False
    return _is_course_file(function.__code__.co_filename)


def uses_course_code(obj: Any) -> bool:
    """True if *obj* is course code or refers to it: a thin wrapper around it is caught too.

    Looks at *obj* and at every global name its code (nested functions and
    lambdas included) reads, so ``def mine(x): return demos_kernel(x)`` counts.
    """
    if is_course_code(obj):
        return True
    function = _python_function(obj)
    if function is None:
        return False
    names = getattr(function, "__globals__", {})
    stack = [function.__code__]
    while stack:
        code = stack.pop()
        for name in code.co_names:
            value = names.get(name)
            if isinstance(value, types.ModuleType):
                if value.__name__.split(".")[0] == "demos" and not _is_tool_module(value.__name__):
                    return True
            elif value is not None and is_course_code(value):
                return True
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return False


@functools.lru_cache(maxsize=1)
def _kernel_class() -> type:
    """The class of Numba CUDA kernels here (the simulator's, or the real dispatcher)."""
    from numba import cuda

    def _never_launched(a):  # pragma: no cover - compiled lazily, never run
        a[0] = 0

    return type(cuda.jit(_never_launched))


@contextlib.contextmanager
def _record_launches(watched: Watched) -> Iterator[None]:
    kernel_class = _kernel_class()
    original = kernel_class.__getitem__

    def recording_getitem(self: Any, configuration: Any) -> Any:
        watched.launches.append(Launch(self, _dims(configuration[0]), _dims(configuration[1])))
        return original(self, configuration)

    kernel_class.__getitem__ = recording_getitem
    try:
        yield
    finally:
        kernel_class.__getitem__ = original


def _code_of(function: Callable) -> Any:
    return getattr(getattr(function, "_implementation", function), "__code__", None)


@contextlib.contextmanager
def watch(forbidden: tuple[Callable, ...] = ()) -> Iterator[Watched]:
    """Record kernel launches, course functions and *forbidden* functions run inside the block."""
    silence_advice()
    watched = Watched()
    forbidden_codes = {code: f.__name__ for f in forbidden if (code := _code_of(f)) is not None}

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in forbidden_codes:
            watched.forbidden_calls.append(forbidden_codes[code])
        if _is_course_file(code.co_filename):
            watched.course_calls.append(f"{frame.f_globals.get('__name__')}.{code.co_name}")
        if previous is not None:  # a watch inside a watch: the outer one sees everything too
            previous(frame, event, arg)

    previous = sys.getprofile()
    with _record_launches(watched):
        sys.setprofile(profiler)
        try:
            yield watched
        finally:
            watched.profiler_removed = sys.getprofile() is not profiler
            sys.setprofile(previous)


class GuardedOutput(kernel_testing.GuardedOutput):
    """An output array on the device with *pad* canary elements on every side.

    Pass :attr:`inner` (a view of the real region, which starts as
    :attr:`CANARY`) to a kernel; :meth:`values` copies the real region back,
    :meth:`canaries_intact` says whether anything was written outside it. A
    write past the end of :attr:`inner` lands in the canaries on a GPU too (the
    simulator raises ``IndexError`` for it instead). See
    :class:`demos.kernel_testing.GuardedOutput`.
    """

    def __init__(
        self, shape: tuple[int, ...], dtype: Any = np.float64, pad: int = kernel_testing.PAD
    ) -> None:
        silence_advice()
        super().__init__(shape, dtype, pad)
