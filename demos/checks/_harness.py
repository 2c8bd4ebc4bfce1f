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


def launch(kernel: Any, grid: Any, block: Any, *args: Any, what: str) -> None:
    """Launch a student kernel; turn the simulator's out-of-bounds IndexError into a clear
    sentence."""
    try:
        with warnings.catch_warnings():
            # the checks launch tiny grids from host arrays on purpose; Numba's advice
            # about occupancy and copies would bury the one line of feedback
            for category in advice_classes():
                warnings.simplefilter("ignore", category)
            kernel[grid, block](*args)
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
            f"({len(wrong)} of {got.size} entries wrong)."
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
