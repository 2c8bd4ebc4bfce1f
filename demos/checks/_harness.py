"""How a check talks to a student: one line of verdict, never a traceback.

Every check runs the student's code on a few inputs chosen to catch the usual
mistakes (sizes that are not a multiple of the block, one element, rectangles),
compares with NumPy, and reports the *first* problem in one sentence. Kernels
write into device buffers with a guard band around the real output, so that a
thread that writes past the end is caught on a real GPU too, where nothing
would raise (the simulator raises an IndexError, which is reported the same way).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import cuda

from demos import kernel_testing
from demos.numba_advice import advice_classes

GUARD = kernel_testing.PAD  # elements of guard band on every side of a kernel's output
SENTINEL = kernel_testing.CANARY  # a value no correct kernel writes


class CheckFailed(Exception):
    """A specific problem with the student's code, already phrased for the student."""


def run_check(name: str, body: Callable[[], str]) -> bool:
    """Run *body*; print a tick and its summary, or a cross and what went wrong. Return success."""
    try:
        summary = body()
    except NotImplementedError:
        print(
            f"✗ {name}: not written yet. "
            "Replace `raise NotImplementedError` (or `pass`) with your code."
        )
        return False
    except CheckFailed as problem:
        print(f"✗ {name}: {problem}")
        return False
    except Exception as exc:  # noqa: BLE001 - student code may raise anything; say what, briefly
        print(f"✗ {name}: your code raised {type(exc).__name__}: {_first_line(exc)}")
        return False
    print(f"✓ {name}: {summary}")
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "(no message)"


def refuse_computed_array_sizes(kernel: Any, what: str) -> None:
    """Raise CheckFailed when *kernel* computes a shared or local array's size, which the
    simulator runs but a GPU cannot compile (:mod:`demos.patterns.compile_rules`)."""
    from demos.patterns.compile_rules import computed_array_sizes, computed_size_advice
    from demos.patterns.simulator import python_function

    try:
        fn = python_function(kernel)
    except TypeError:
        return  # not a kernel: the launch itself says so
    sizes = computed_array_sizes(fn)
    if sizes:
        raise CheckFailed(f"{what}: {computed_size_advice(sizes)}")


def launch(kernel: Any, grid: Any, block: Any, *args: Any, what: str, extra: tuple = ()) -> None:
    """Launch a student kernel; turn the simulator's out-of-bounds IndexError into a clear
    sentence. *extra*: what follows grid and block in the launch (a stream, a shared-memory size).
    """
    refuse_computed_array_sizes(kernel, what)
    try:
        with warnings.catch_warnings():
            # the checks launch tiny grids from host arrays on purpose; Numba's advice
            # about occupancy and copies would bury the one line of feedback
            for category in advice_classes():
                warnings.simplefilter("ignore", category)
            kernel[(grid, block, *extra)](*args)
        cuda.synchronize()
    except NotImplementedError:
        raise
    except IndexError as exc:
        raise CheckFailed(
            f"{what}: a thread indexed outside an array ({_first_line(exc)}). "
            "Does every thread check its index against the array's shape before using it?"
        ) from None
    except Exception as exc:  # noqa: BLE001 - compile and launch errors of student kernels vary
        raise CheckFailed(
            f"{what}: the launch failed with {type(exc).__name__}: {_first_line(exc)}"
        ) from None


class GuardedOutput(kernel_testing.GuardedOutput):
    """A device output of *shape* inside a guard band; :meth:`fetch` says what went wrong."""

    def __init__(
        self, shape: tuple[int, ...], dtype: Any = np.float64, initial: np.ndarray | None = None
    ) -> None:
        super().__init__(shape, dtype, GUARD, initial=initial, fill=SENTINEL)
        self.view = self.inner

    def fetch(self, what: str) -> np.ndarray:
        """The output as a host array, after checking the guard band is untouched."""
        where = self.first_write_outside()
        if where is not None:
            raise CheckFailed(
                f"{what}: the kernel wrote outside the output, at index {where}. "
                "Threads past the end must do nothing: guard with `if i < out.shape[0] ...`."
            )
        return self.values()


def compare(
    got: Any, expected: np.ndarray, what: str, rtol: float = 1e-6, atol: float = 1e-9
) -> None:
    """Raise CheckFailed naming the first wrong entry, a wrong shape or a wrong dtype."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise CheckFailed(f"{what}: the result has shape {got.shape}, expected {expected.shape}.")
    unwritten = kernel_testing.unwritten_entries(got, SENTINEL)
    if len(unwritten) == got.size and got.size:
        raise CheckFailed(f"{what}: the kernel wrote nothing at all.")
    if len(unwritten):
        where = tuple(int(v) for v in unwritten[0])
        raise CheckFailed(
            f"{what}: no thread wrote entry {where} ({len(unwritten)} of {got.size} "
            "entries unwritten). Does the launch's grid reach every entry with your indexing?"
        )
    wrong = kernel_testing.wrong_entries(got, expected, rtol=rtol, atol=atol)
    if wrong.size:
        where = tuple(int(v) for v in wrong[0])
        raise CheckFailed(
            f"{what}: entry {where} is {got[where]!r}, expected {expected[where]!r} "
            f"({len(wrong)} of {got.size} entries wrong).{_nan_hint(got[where], expected[where])}"
        )


def _nan_hint(got: Any, expected: Any) -> str:
    """Why a NaN where a number belongs: the check's inputs lie inside NaN (GuardedInput) and
    uninitialised memory reads NaN in the simulator, so one of the two happened."""
    if not (np.isnan(got) and np.isfinite(expected)):
        return ""
    return (
        " NaN means a thread read past the end of an input (the check surrounds every input "
        "with NaN; on a GPU such a read finds whatever lies there, often zeros that hide it) "
        "or read memory it never set: is every load guarded by `if i < n`?"
    )


def expect_dtype(got: Any, dtype: Any, what: str) -> None:
    if got.dtype != np.dtype(dtype):
        raise CheckFailed(
            f"{what}: the result has dtype {got.dtype}, expected {np.dtype(dtype)} "
            "(keep the input's dtype; don't mix in float64 constants or arrays)."
        )


def blocks(n: int, per_block: int) -> int:
    return max(1, math.ceil(n / per_block))


def require_shared_memory(kernel: Any, advice: str) -> None:
    """Fail unless the kernel's code mentions shared arrays and barriers: the lesson is *how*, not
    only what."""
    seen = set(getattr(kernel, "py_func", kernel).__code__.co_names)
    missing = [name for name in ("shared", "syncthreads") if name not in seen]
    if missing:
        raise CheckFailed(f"the kernel does not use {' or '.join(missing)}: {advice}")


def on_gpu() -> bool:
    from demos import hardware

    return not hardware.simulator_enabled() and cuda.is_available()


def warp_error_text(exc: BaseException) -> str:
    """A simulator thread's error without the ``tid=[..] ctaid=[..]:`` it is prefixed with."""
    return re.sub(r"^tid=\[[^\]]*\] ctaid=\[[^\]]*\]:\s*", "", str(exc).strip())


def check_synchronisation(
    kernel: Any, grid: Any, block: Any, args: tuple, what: str, advice: dict[str, str]
) -> Any:
    """Run the kernel once in the simulator with its barriers, shared memory and warps watched.

    The simulator runs a block's threads one at a time, so a race or a barrier
    that only some threads reach still gives the right numbers there (and a hang
    or wrong numbers on a GPU). Raise CheckFailed with the first such problem and
    the *advice* for its kind ("barriers", "write", "read", "uninitialised",
    "warp"); return the log when there is none, None when the kernel failed
    otherwise (the check's own launches then say how).
    """
    from demos.patterns.simulator import AccessLog, simulated
    from demos.patterns.simwarp import WarpError

    refuse_computed_array_sizes(kernel, what)
    log = AccessLog()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with log.counting():
                simulated(kernel)[grid, block](*args)
    except NotImplementedError:
        raise
    except WarpError as exc:
        raise CheckFailed(
            f"{what}: {warp_error_text(exc)}. {advice.get('warp', '')}".strip()
        ) from None
    except Exception:  # noqa: BLE001 - reported by the check's own launches, with their words
        return None
    for kind, sentence in log.problems():
        raise CheckFailed(f"{what}: {sentence} {advice.get(kind, '')}".strip())
    return log


class GuardedInput:
    """A device input inside a band of NaN: a thread that reads past its end carries NaN into
    what it writes, so the read is caught on a GPU too (where it would quietly read whatever lies
    there, often zeros that change nothing); the simulator raises an IndexError as for outputs."""

    def __init__(self, values: np.ndarray, pad: int = GUARD) -> None:
        values = np.asarray(values)
        region = tuple(slice(pad, pad + s) for s in values.shape)
        host = np.full([s + 2 * pad for s in values.shape], np.nan, dtype=values.dtype)
        host[region] = values
        self.device = cuda.to_device(host)
        self.view = self.device[region]


class ReductionWatch(np.ndarray):
    """A NumPy array that notes how it is summed: every reduction (``a.sum()``, ``np.sum(a)``,
    ``np.add.reduce``) with the number of elements it covered, every piece cut from it (a view
    such as ``a[0:10]``), and every Python loop over all of it (``sum(a)``, ``math.fsum(a)``).

    Make one with :func:`watched`; read :attr:`log` (shared by the array and its pieces)."""

    log: dict[str, list[int]]

    def __array_finalize__(self, obj: Any) -> None:
        log = getattr(obj, "log", None)
        if log is None:
            return
        self.log = log
        if self.size < log["size"][0]:
            log["pieces"].append(int(self.size))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "reduce":
            for a in inputs:
                if isinstance(a, ReductionWatch):
                    a.log["reductions"].append(int(a.size))
        plain = [
            np.asarray(a).view(np.ndarray) if isinstance(a, ReductionWatch) else a for a in inputs
        ]
        if "out" in kwargs:
            kwargs["out"] = tuple(
                o.view(np.ndarray) if isinstance(o, ReductionWatch) else o for o in kwargs["out"]
            )
        return getattr(ufunc, method)(*plain, **kwargs)

    def __iter__(self) -> Any:
        if self.size == self.log["size"][0] and self.size:
            self.log["loops"].append(int(self.size))
        return super().__iter__()


def watched(values: np.ndarray) -> ReductionWatch:
    """*values* as a :class:`ReductionWatch` with an empty log."""
    array = np.asarray(values).view(ReductionWatch)
    array.log = {"size": [int(array.size)], "reductions": [], "pieces": [], "loops": []}
    return array
