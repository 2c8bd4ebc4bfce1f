"""What hidden tests are written with: they run in the grader's process, never in the kernel.

A hidden test (the part of a test cell between ``### BEGIN HIDDEN TESTS`` and
``### END HIDDEN TESTS`` in ``solutions/``) is executed by
:mod:`.hidden_tests` with this module as ``grading``, NumPy as ``np``, and
the student's functions and kernels as stand-ins (:mod:`.proxies`): calling a
function runs it in the student's kernel and brings back plain data;
launching a kernel runs the student's checked kernel in the grader's
simulator, sandboxed beside the notebook (:mod:`.kernel_runner`). Every
comparison and count below therefore happens where student code cannot
reach, and every failure message is a sentence written here or in the test
(never a hidden input, an expected value or the test's source).

The names follow :mod:`demos.grading` (what the visible tests use in the
notebook), so a hidden test reads like a visible one.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from demos.distance.reference import reference_distance as reference_distances
from demos.grading.watch import Launch, Watched  # one record of a call, on both sides
from demos.grading.wire import DeviceArray, Marker, Opaque
from grader.verdicts import SECRET_VARIABLE
from grader.verdicts.context import current

_DEFAULT_SALT = b"gpu-python course: default grading seed"

__all__ = [
    "GradingFailure",
    "GuardedOutput",
    "Launch",
    "MachineryFailure",
    "SECRET_VARIABLE",
    "StudentError",
    "assert_close",
    "assert_equal",
    "counting_module",
    "device_array",
    "devices",
    "elementwise",
    "expect",
    "mentions",
    "started_all_before_waiting",
    "hidden_test",
    "host_arrays",
    "is_course_code",
    "is_device_array",
    "reference_distances",
    "rng",
    "seed_for",
    "watch",
]


class GradingFailure(AssertionError):
    """A failed expectation of a test, with a message written by the course (safe to show)."""


class StudentError(Exception):
    """The student's code raised (or their kernel could not answer); the message is theirs."""


class MachineryFailure(Exception):
    """The grading machinery failed during a hidden test: no verdict on the student's code.

    The kernel died or stopped answering (killed from outside, a crash), or the
    grader's own process hit an operating-system error (a full disk, the
    sandbox). Scoring that as the student's failure would cost a correct
    answer its points, so :mod:`.hidden_tests` turns it into a failed
    notebook (graded again later), never into a verdict.
    """


def is_machinery_error(error: BaseException) -> bool:
    """Whether *error*, raised in the grader's process during a hidden test, is the grader's own.

    The student's code never raises here (its errors come back as data,
    :class:`StudentError`), so an operating-system error (a full disk, a
    timeout of the grader's own calls) is the machinery's.
    """
    return isinstance(error, (MachineryFailure, OSError))


def seed_for(test_name: str) -> int:
    """The seed of *test_name*: fixed by default, derived from the course secret when set."""
    secret = os.environ.get(SECRET_VARIABLE)
    key = secret.encode() if secret else _DEFAULT_SALT
    digest = hmac.new(key, test_name.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little")


def rng(test_name: str) -> np.random.Generator:
    """The random generator for the inputs of the test called *test_name*."""
    return np.random.default_rng(seed_for(test_name))


def expect(condition: Any, message: str) -> None:
    """Fail with *message* (a sentence that gives nothing hidden away) unless *condition*."""
    if not (condition is True or (type(condition) in (bool, np.bool_) and bool(condition))):
        raise GradingFailure(message)


def _plain_array(value: Any, what: str) -> np.ndarray:
    if isinstance(value, Opaque) or (
        isinstance(value, (list, tuple)) and any(isinstance(v, Opaque) for v in value)
    ):
        raise GradingFailure(f"{what} is not an array of numbers")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        raise GradingFailure(f"{what} is not an array") from None
    if array.dtype.kind not in "biufc":
        raise GradingFailure(f"{what} is not an array of numbers")
    return array.view(np.ndarray)


def assert_close(
    actual: Any, expected: Any, what: str, rtol: float = 1e-7, atol: float = 0.0
) -> None:
    """Fail with "*what* is wrong for a hidden input" unless shapes match and values are close."""
    got, want = _plain_array(actual, what), np.asarray(expected)
    expect(got.shape == want.shape, f"{what} has the wrong shape for a hidden input")
    with np.errstate(invalid="ignore", over="ignore"):
        close = (got == want) | (np.abs(got - want) <= atol + rtol * np.abs(want))
    expect(
        bool(np.all(close | (np.isnan(got) & np.isnan(want)))),
        f"{what} is wrong for a hidden input",
    )


def assert_equal(actual: Any, expected: Any, what: str) -> None:
    """Like :func:`assert_close`, for exact values (indices, integers)."""
    assert_close(actual, expected, what, rtol=0.0, atol=0.0)


@contextlib.contextmanager
def hidden_test(name: str, what: str) -> Iterator[np.random.Generator]:
    """A hidden test's block; yields its seeded generator.

    *what* names the part tested ("the heat_step kernel"). Any failure that is not
    one of the course's own sentences becomes "*what* fails for a hidden input".
    """
    try:
        yield rng(name)
    except (GradingFailure, MachineryFailure):
        raise
    except StudentError as error:  # the student's own error: its type helps, its text may not
        kind = str(error).split(":", 1)[0].strip()[:40] or "an error"
        raise GradingFailure(
            f"{what} fails for a hidden input ({kind}); test it on more cases"
        ) from None
    except Exception as error:
        if is_machinery_error(error):
            raise MachineryFailure(f"{type(error).__name__}: {error}") from error
        raise GradingFailure(
            f"{what} fails for a hidden input ({type(error).__name__}); test it on more cases"
        ) from None


# --- what the student's code did, as the kernel reported it -------------------------------
@contextlib.contextmanager
def watch(forbidden: tuple[str, ...] = ()) -> Iterator[Watched]:
    """Collect what the student's functions called inside the block launched and called.

    *forbidden* names functions by their full path (``"numpy.array_split"``).
    """
    watched = Watched()
    with current().watching(watched, forbidden):
        yield watched


def record_seen(watched: Watched, seen: dict) -> None:
    """Add a reply's ``seen`` section to *watched* (only plain values are kept)."""
    for entry in seen.get("launches", []):
        try:
            name, grid, block = entry
            watched.launches.append(
                Launch(str(name), tuple(int(v) for v in grid), tuple(int(v) for v in block))  # type: ignore[arg-type]
            )
        except (TypeError, ValueError):
            watched.launches.append(Launch("<unreadable>", (0, 0, 0), (0, 0, 0)))
    watched.course_calls += [str(c) for c in seen.get("course_calls", [])]
    watched.forbidden_calls += [str(c) for c in seen.get("forbidden_calls", [])]
    if seen.get("profiler_removed") is True:  # blind: what it did not see may have run
        watched.profiler_removed = True
        watched.course_calls.append("the grader's watch was switched off")
        watched.forbidden_calls.append("the grader's watch was switched off")


# --- arguments built in the kernel ---------------------------------------------------------
def device_array(array: np.ndarray) -> Marker:
    """An argument that arrives in the kernel as a GPU array (CuPy, or the stand-in)."""
    return Marker({"$make": "device_array", "array": np.asarray(array)})


def devices(count: int) -> Marker:
    """An argument that arrives as *count* devices (:func:`demos.grading.devices`)."""
    return Marker({"$make": "devices", "count": int(count)})


def counting_module() -> Marker:
    """An argument that arrives as the counting module of :mod:`demos.profiling.sync_counter`."""
    return Marker({"$make": "counting_module"})


def host_arrays(arrays: list) -> Marker:
    """Arguments that arrive as host arrays whose values only the counting module's ``asarray``
    reads unnoticed (its report's ``host_reads`` counts every other way): put the counting module
    (:func:`counting_module`) before them in the call."""
    return Marker({"$make": "host_arrays", "arrays": [np.asarray(a) for a in arrays]})


def elementwise(name: str) -> Marker:
    """An argument that arrives as a function of :data:`demos.grading.serve.ELEMENTWISE`."""
    return Marker({"$make": "elementwise", "name": name})


def started_all_before_waiting(events: Any) -> bool:
    """True if every device got its data before the first result came back (see ``DeviceLog``)."""
    try:
        pairs = [(str(kind), int(index)) for kind, index in events]
    except (TypeError, ValueError):
        return False
    first_wait = next((k for k, (kind, _) in enumerate(pairs) if kind == "to_host"), len(pairs))
    started = {index for kind, index in pairs[:first_wait] if kind == "to_device"}
    return started == {index for _, index in pairs}


def mentions(function: str, name: str) -> bool:
    """True if the student's last definition of *function* refers to *name* (in its source)."""
    from grader.verdicts.student_source import reads_name

    return reads_name(current().student_sources, function, name)


def is_device_array(value: Any) -> bool:
    """True if the student's function returned a GPU array (not a NumPy array)."""
    return type(value) is DeviceArray


def is_course_code(student_object: Any) -> bool:
    """True if the student's function or kernel is (or wraps) the course package's own code."""
    return bool(student_object.is_course_code())


class GuardedOutput:
    """An output with *pad* canary elements on every side, for the student's kernels.

    Pass :attr:`inner` to a kernel; the whole buffer travels to the grader's
    simulator and back, so :meth:`values` and :meth:`canaries_intact` read the
    grader's own copy.
    """

    CANARY = -12345.0

    def __init__(self, shape: tuple[int, ...], dtype: Any = np.float64, pad: int = 32) -> None:
        self.shape, self.pad = tuple(shape), pad
        self.buffer = np.full([s + 2 * pad for s in self.shape], self.CANARY, dtype=dtype)
        self.region = tuple(slice(pad, pad + s) for s in self.shape)
        self.inner = Marker({"$guarded": self.buffer, "pad": pad})

    def values(self) -> np.ndarray:
        """The real region."""
        return self.buffer[self.region].copy()

    def canaries_intact(self) -> bool:
        """True if nothing outside the real region was written."""
        whole = self.buffer.copy()
        whole[self.region] = self.CANARY
        return bool(np.all(whole == np.asarray(self.CANARY, dtype=whole.dtype)))
