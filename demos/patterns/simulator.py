"""Numba's CUDA simulator, made to teach kernel patterns: warp shuffles and counted memory accesses.

Two gaps of the simulator are filled here, and only when it is active:

* It has no ``cuda.shfl_down_sync``. :func:`enable_warp_shuffles` adds one that
  exchanges values between the lanes of a warp through a barrier of the block,
  so shuffle kernels run on a laptop. It needs every live thread of the block
  to reach the same shuffles (true for the reductions of the course; a kernel
  that shuffles in only some warps while the others wait at a barrier hangs).
* A grader or a student wants to know *how* a kernel works, not only what it
  returns. :class:`AccessLog` wraps arrays so that each element read, each plain
  write and each atomic (with the block it came from) is counted. The simulator
  keeps an ndarray subclass through its copies, which is what makes this work.

On a real GPU kernels run as compiled code; to count what a kernel does there,
:func:`simulated` runs its Python source in the simulator all the same.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from demos import hardware

_state = threading.local()  # .atomic_block: the block of the thread inside an atomic, else None


def _simulator_module():
    """The simulator's kernel API (importable on a GPU machine too: :func:`simulated` uses it
    there)."""
    from numba.cuda.simulator import kernelapi

    return kernelapi


def python_function(kernel: Any) -> Any:
    """The Python function behind a ``@cuda.jit`` kernel, compiled (``py_func``) or simulated
    (``fn``)."""
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    if not callable(fn):
        raise TypeError("expected a kernel made with @cuda.jit")
    return fn


def simulated(kernel: Any) -> Any:
    """The kernel as the simulator runs it, also on a GPU machine (for counting its accesses).

    Counting is done in the simulator everywhere, so that a check of *how* a
    kernel works gives the same answer on a laptop and on a GPU node. The
    kernel's module-level ``cuda`` is swapped for the simulator's while it runs;
    device functions it calls must be simulated too, so graded kernels are
    written without them.
    """
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    enable_warp_shuffles(force=True)
    return FakeCUDAKernel(python_function(kernel), device=False)


def _shfl_down_sync(self, mask: int, value: Any, delta: int) -> Any:
    """Value of the lane *delta* above this one in the warp (own value past the warp's end)."""
    thread = threading.current_thread()
    board = thread._manager.__dict__.setdefault("_shuffle_board", {})
    tid = thread.thread_id
    board[tid] = value
    thread.syncthreads()
    lane = tid % 32
    result = board.get(tid + delta, value) if lane + delta < 32 else value
    thread.syncthreads()  # nobody overwrites the board before everyone has read it
    return result


def enable_warp_shuffles(force: bool = False) -> bool:
    """Give the simulator ``cuda.shfl_down_sync``; False (and nothing done) when it is off, unless
    *force*."""
    if not (force or hardware.simulator_enabled()):
        return False
    kernelapi = _simulator_module()
    kernelapi.FakeCUDAModule.shfl_down_sync = _shfl_down_sync
    return True


def _is_element(index: Any) -> bool:
    if isinstance(index, tuple):
        return all(isinstance(i, (int, np.integer)) for i in index)
    return isinstance(index, (int, np.integer))


def _key(index: Any) -> tuple[int, ...]:
    return tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)


class AccessLog:
    """Counts of element reads, plain writes and atomics on the arrays it wrapped.

    Use :meth:`wrap` on the kernel's arguments, launch inside :meth:`counting`,
    then read :attr:`reads`, :attr:`writes`, :attr:`atomics` (each a Counter of
    ``(array name, index)``) and :attr:`atomics_per_block` (``(name, block, index)``).
    """

    def __init__(self) -> None:
        self.reads: Counter = Counter()
        self.writes: Counter = Counter()
        self.atomics: Counter = Counter()
        self.atomics_per_block: Counter = Counter()
        self.barriers = 0
        self.shared_arrays = 0
        self._lock = threading.Lock()

    def wrap(self, array: np.ndarray, name: str) -> np.ndarray:
        """A view of *array* that reports every element access to this log under *name*."""
        log = self

        class Counted(np.ndarray):
            def __getitem__(self, index):
                if _is_element(index) and getattr(_state, "atomic_block", None) is None:
                    with log._lock:
                        log.reads[(name, _key(index))] += 1
                return super().__getitem__(index)

            def __setitem__(self, index, value):
                if _is_element(index):
                    block = getattr(_state, "atomic_block", None)
                    with log._lock:
                        if block is None:
                            log.writes[(name, _key(index))] += 1
                        else:
                            log.atomics[(name, _key(index))] += 1
                            log.atomics_per_block[(name, block, _key(index))] += 1
                super().__setitem__(index, value)

        Counted.__name__ = f"Counted[{name}]"
        return np.asarray(array).view(Counted)

    @contextlib.contextmanager
    def counting(self) -> Iterator[AccessLog]:
        """Within this block, count atomics (not as a read and a write), barriers and shared arrays.

        :attr:`barriers` counts ``cuda.syncthreads()`` calls of all threads,
        :attr:`shared_arrays` the ``cuda.shared.array`` calls.
        """
        kernelapi = _simulator_module()
        original = kernelapi.FakeCUDAAtomic.add
        original_sync = kernelapi.FakeCUDAModule.syncthreads
        original_shared = kernelapi.FakeCUDAShared.array
        log = self

        def syncthreads(module_self):
            with log._lock:
                log.barriers += 1
            return original_sync(module_self)

        def shared_array(shared_self, *args, **kwargs):
            with log._lock:
                log.shared_arrays += 1
            return original_shared(shared_self, *args, **kwargs)

        def add(atomic_self, array, index, value):
            _state.atomic_block = tuple(threading.current_thread().blockIdx)
            try:
                return original(atomic_self, array, index, value)
            finally:
                _state.atomic_block = None

        kernelapi.FakeCUDAAtomic.add = add
        kernelapi.FakeCUDAModule.syncthreads = syncthreads
        kernelapi.FakeCUDAShared.array = shared_array
        try:
            yield self
        finally:
            kernelapi.FakeCUDAAtomic.add = original
            kernelapi.FakeCUDAModule.syncthreads = original_sync
            kernelapi.FakeCUDAShared.array = original_shared

    def total(self, counter: Counter, name: str) -> int:
        """Sum of a counter's entries for the array *name*."""
        return sum(count for key, count in counter.items() if key[0] == name)

    def max_atomics_per_bin_and_block(self, name: str) -> int:
        """The most atomics any one block made on any one element of *name* (0 if none)."""
        return max((c for key, c in self.atomics_per_block.items() if key[0] == name), default=0)
