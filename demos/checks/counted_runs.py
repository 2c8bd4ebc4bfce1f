"""Running a student's kernel in the simulator with every access counted, for chapter 4c's checks.

:func:`counted_run` launches the kernel on arrays wrapped by an
:class:`~demos.patterns.simulator.AccessLog` and counts each thread's writes to
shared memory; :func:`raise_sync_problems` turns the first race or uneven
barrier the log saw into the check's one line; :func:`fixed_constants` names
the module constants a kernel reads that a check's recompilation leaves alone.
"""

from __future__ import annotations

import threading
import warnings
from collections import Counter
from typing import Any

import numpy as np

from demos.checks._harness import CheckFailed, refuse_computed_array_sizes
from demos.patterns.simulator import AccessLog, python_function, simulated


def counted_run(
    kernel: Any,
    grid: int,
    block: int,
    arrays: dict[str, np.ndarray],
    what: str,
    outside: str = "Threads past the end of an array do nothing with it (`if i < n`); in a "
    "scan they load 0 instead.",
) -> tuple[AccessLog, Counter]:
    """Run ``kernel[grid, block](*arrays)`` in the simulator with every access counted; the log
    and the shared-memory writes per (block, thread). The arrays are changed in place; *outside*
    is the advice for an index outside an array."""
    refuse_computed_array_sizes(kernel, what)
    log = AccessLog()
    writes: Counter = Counter()
    lock = threading.Lock()
    original = log.shared.access

    def access(site: Any, index: Any, kind: str, value: Any = None, old: Any = None) -> None:
        if kind == "write":
            thread = threading.current_thread()
            with lock:
                writes[(tuple(thread.blockIdx), thread.thread_id)] += 1
        original(site, index, kind, value, old)

    log.shared.access = access
    wrapped = [log.wrap(array, name) for name, array in arrays.items()]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with log.counting():
                simulated(kernel)[grid, block](*wrapped)
    except NotImplementedError:
        raise
    except IndexError as exc:
        raise CheckFailed(
            f"{what}: a thread indexed outside an array ({str(exc).strip()[:200]}). {outside}"
        ) from None
    except OverflowError as exc:
        raise CheckFailed(
            f"{what}: a value did not fit the array it was stored in ({str(exc).strip()[:200]}). "
            "Keep int32 values in int32 arrays: int8 and int16 overflow (a GPU wraps them "
            "silently)."
        ) from None
    except Exception as exc:  # noqa: BLE001 - student kernels fail in many ways; say which
        first = (str(exc).strip().splitlines() or ["(no message)"])[0][:200]
        raise CheckFailed(f"{what}: the launch failed with {type(exc).__name__}: {first}") from None
    for array, view in zip(arrays.values(), wrapped, strict=True):
        array[...] = np.asarray(view)
    return log, writes


def fixed_constants(kernel: Any, *changed: str) -> str:
    """A sentence naming the module-level int constants the kernel reads besides *changed*
    (``STEPS = 6``), which stay as written when a check compiles it with other *changed*."""
    fn = python_function(kernel)
    found = [
        f"{name} = {value}"
        for name in fn.__code__.co_names
        if name not in changed
        and isinstance(value := fn.__globals__.get(name), int)
        and not isinstance(value, bool)
    ]
    if not found:
        return ""
    return (
        f" The check changes only {' and '.join(changed)}; your kernel also reads "
        f"{', '.join(found)}, which stays as written: compute it from {changed[0]} instead."
    )


def raise_sync_problems(log: AccessLog, what: str, advice: dict[str, str]) -> None:
    """The first race or uneven barrier the run showed, as a CheckFailed with *advice*."""
    for kind, sentence in log.problems():
        raise CheckFailed(f"{what}: {sentence} {advice.get(kind, '')}".strip())
