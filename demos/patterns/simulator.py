"""Numba's CUDA simulator, made to teach kernels: warp collectives, own shared arrays, counted
accesses, barriers and races.

The simulator runs a block's threads one Python thread at a time, so a kernel
with a race or a misplaced barrier usually gives the right answer there and a
wrong one (or a hang) on a GPU. This module fills its gaps, only when it is
active (or for :func:`simulated`):

* warp shuffles, votes and ``cuda.syncwarp`` among the 32 lanes of a warp
  (:mod:`demos.patterns.simwarp`);
* every ``cuda.shared.array`` call gets its own buffer, also two calls on one
  line (the simulator told them apart by line and gave both the same), a fresh
  one per block, filled with NaN or 0x5A5A as uninitialised memory might be (so is
  every ``cuda.local.array``: a GPU's registers start with garbage, not zeros, and
  the dynamic shared memory of ``cuda.shared.array(0, dtype)``, afresh per block);
* a thread that ends by anything it raised, ``SystemExit`` included, fails the
  launch (the simulator itself passes over all but an ``Exception``);
* :class:`AccessLog` counts each element read, plain write and atomic of the
  arrays it wraps, the barriers each thread reached, and every access to shared
  memory by thread and by barrier interval: two threads of a block that write
  one shared element between the same two barriers (``local[v] += 1``), or one
  that reads what another writes there, are a race; a block whose threads
  reach different numbers of ``cuda.syncthreads()`` has a barrier that not
  every thread reaches.

On a real GPU kernels run as compiled code; to count what a kernel does there,
:func:`simulated` runs its Python source in the simulator all the same.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import types
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from demos import hardware
from demos.patterns import simrace, simwarp
from demos.patterns.simmemory import dynamic_buffer, local_array, shared_buffer
from demos.patterns.simrace import is_element, key, state

_lock = threading.Lock()
_ATOMICS = "add sub and_ or_ xor inc dec exch max min nanmax nanmin compare_and_swap cas".split()
_BARRIERS = ("syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or")


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
    kernel's module-level ``cuda`` is swapped for the simulator's while it runs,
    and so is every device function it calls (``cuda.jit(device=True)``, such as
    :func:`demos.patterns.warp_reduce.warp_reduce_sum`), which runs as Python too.
    """
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    enable_warp_shuffles(force=True)
    return FakeCUDAKernel(with_simulated_device_functions(python_function(kernel)), device=False)


def with_simulated_device_functions(fn: Any) -> Any:
    """*fn*, or a copy of it whose globals map each device function it names to the simulator's
    version (compiled device functions cannot be called from Python), recursively."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    swaps = {}
    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        compiled = getattr(value, "targetoptions", {}).get("device") is True
        if compiled or getattr(value, "_device", False) is True:
            inner = with_simulated_device_functions(python_function(value))
            swaps[name] = FakeCUDAKernel(inner, device=True)
    if not swaps:
        return fn
    scope = {**fn.__globals__, **swaps}
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def _shared_array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> np.ndarray:
    if shape == 0:
        return dynamic_buffer(self, dtype, _original_shared)
    if alignment is not None:  # the simulator's own answer (it supports no alignment)
        return _original_shared(self, shape, dtype, alignment)
    caller = sys._getframe(1)
    return shared_buffer(self, shape, dtype, (caller.f_code, caller.f_lasti))


def _register_thread(self: Any, *args: Any, **kwargs: Any) -> None:
    _original_thread_init(self, *args, **kwargs)
    simwarp.register_thread(self)
    if _active is not None:
        _active.thread_started(self)


def _run_thread(self: Any) -> None:
    simwarp.run_thread(self, _run_to_a_verdict)


def _run_to_a_verdict(thread: Any) -> None:
    """Run a simulated thread so that whatever it raises fails the launch.

    The simulator keeps only an ``Exception`` for the launch to raise: a
    ``SystemExit`` (or an error that its own handler trips over, as a NumPy
    ``MemoryError`` for a huge local array does) would end the thread quietly
    and the launch would look fine.
    """
    try:
        _original_thread_run(thread)
    except BaseException as error:  # noqa: BLE001  (every way out of a thread is a failure)
        if thread.exception is None:
            failure = RuntimeError(
                f"tid={list(thread.threadIdx)} ctaid={list(thread.blockIdx)}: "
                f"{type(error).__name__}: {error}"
            )
            thread.exception = (failure, None)


_original_shared: Any = None
_original_thread_init: Any = None
_original_thread_run: Any = None
_active: AccessLog | None = None  # the log counting right now, if any


def _underlying(array: Any) -> Any:
    """The NumPy array behind a simulator array argument (or the array itself)."""
    while not isinstance(array, np.ndarray):
        inner = array.__dict__.get("_item") if hasattr(array, "__dict__") else None
        inner = inner if inner is not None else getattr(array, "_ary", None)
        if inner is None:
            return array
        array = inner
    return array


def enable_warp_shuffles(force: bool = False) -> bool:
    """Give the simulator warp collectives and an own buffer per shared array; False (and nothing
    done) when it is off, unless *force*."""
    global _original_shared, _original_thread_init, _original_thread_run
    if not (force or hardware.simulator_enabled()):
        return False
    kernelapi = _simulator_module()
    from numba.cuda.simulator import kernel as sim_kernel

    with _lock:
        for name, function in simwarp.COLLECTIVES.items():
            setattr(kernelapi.FakeCUDAModule, name, function)
        if _original_shared is None:
            _original_shared = kernelapi.FakeCUDAShared.array
            kernelapi.FakeCUDAShared.array = _shared_array
            kernelapi.FakeCUDALocal.array = local_array
            _original_thread_init = sim_kernel.BlockThread.__init__
            sim_kernel.BlockThread.__init__ = _register_thread
            _original_thread_run = sim_kernel.BlockThread.run
            sim_kernel.BlockThread.run = _run_thread
    return True


class AccessLog:
    """What a kernel did, counted: element accesses, atomics, barriers, shared-memory races.

    Use :meth:`wrap` on the kernel's arguments, launch inside :meth:`counting`,
    then read :attr:`reads`, :attr:`writes`, :attr:`atomics` (each a Counter of
    ``(array name, index)``), :attr:`atomics_per_block` (``(name, block, index)``),
    :attr:`barrier_counts` (``(block, thread) -> barriers reached``), the races on
    shared memory (:meth:`racy_shared_writes` & co.) and :meth:`problems` (sentences).
    """

    #: When True, every new log also keeps the byte address of each element access by warp
    #: and kernel line in :attr:`requests` (read with :func:`simwarp.warp_requests`).
    trace_addresses = False

    def __init__(self) -> None:
        self.requests: dict[tuple, dict[int, int]] | None = {} if self.trace_addresses else None
        self.reads: Counter = Counter()
        self.writes: Counter = Counter()
        self.atomics: Counter = Counter()
        self.atomics_per_block: Counter = Counter()
        self.atomic_functions: Counter = Counter()  # "add", "inc", ...
        self.warp_collectives: Counter = Counter()  # "shfl_down_sync", "syncwarp", ...
        self.barriers = 0
        self.shared_arrays = 0
        self.barrier_counts: dict[tuple, int] = {}
        self._lock = threading.Lock()
        self.shared = simrace.SharedWatch(self._lock)

    def wrap(self, array: np.ndarray, name: str) -> np.ndarray:
        """A view of *array* that reports every element access to this log under *name*."""
        log, requests = self, self.requests
        note = requests is not None and functools.partial(
            simwarp.note_request, requests, self._lock
        )

        class Counted(np.ndarray):
            def __getitem__(self, index):
                if is_element(index) and not getattr(state, "atomic", False):
                    with log._lock:
                        log.reads[(name, key(index))] += 1
                    if note:
                        note("global read", name, self, index)
                return super().__getitem__(index)

            def __setitem__(self, index, value):
                if is_element(index) and not getattr(state, "atomic", False):
                    with log._lock:
                        log.writes[(name, key(index))] += 1
                    if note:
                        note("global write", name, self, index)
                super().__setitem__(index, value)

        Counted.__name__ = f"Counted[{name}]"
        Counted._course_name = name
        return np.asarray(array).view(Counted)

    # -- called from the simulator while counting
    def thread_started(self, thread: Any) -> None:
        with self._lock:
            self.shared.block_dim = tuple(thread._manager._block_dim)
            self.shared.grid_dim = tuple(thread._manager._grid_dim)
            self.barrier_counts.setdefault((tuple(thread.blockIdx), thread.thread_id), 0)

    def warp_collective(self, name: str) -> None:
        with self._lock:
            self.warp_collectives[name] += 1

    def _barrier(self, original: Any) -> Any:
        log = self

        def sync(module_self, *args):
            thread = threading.current_thread()
            where = (tuple(thread.blockIdx), thread.thread_id)
            with log._lock:
                log.barriers += 1
                log.barrier_counts[where] = log.barrier_counts.get(where, 0) + 1
            try:
                return original(module_self, *args)
            finally:  # accesses after the barrier belong to the next interval
                thread._course_barriers = getattr(thread, "_course_barriers", 0) + 1

        return sync

    def _shared_array(self, shared_self: Any, shape: Any, dtype: Any, alignment: Any = None):
        with self._lock:
            self.shared_arrays += 1
        if shape == 0:
            return dynamic_buffer(shared_self, dtype, _original_shared)
        if alignment is not None:
            return _original_shared(shared_self, shape, dtype, alignment)
        caller = sys._getframe(2)
        site = (caller.f_code, caller.f_lasti)
        buffer = shared_buffer(shared_self, shape, dtype, site)
        with self._lock:
            view = self.shared.view(buffer, site, caller)
        if self.requests is None:
            return view
        return simwarp.traced_shared(view, self.requests, self._lock)

    def _atomic(self, name: str, original: Any) -> Any:
        log = self

        def operation(atomic_self, array, *args):
            target = _underlying(array)
            state.atomic = True
            try:
                result = original(atomic_self, array, *args)
            finally:
                state.atomic = False
            index = key(args[0] if name != "compare_and_swap" else (0,) * target.ndim)
            counted = getattr(type(target), "_course_name", None)
            with log._lock:
                log.atomic_functions[name.rstrip("_")] += 1
                if counted is not None:
                    block = tuple(threading.current_thread().blockIdx)
                    log.atomics[(counted, index)] += 1
                    log.atomics_per_block[(counted, block, index)] += 1
            shared = getattr(type(target), "_course_shared", None)
            where = simrace.element_key(target, index) if shared is not None else None
            if where is not None:
                log.shared.access(shared[0], where, "atomic")
            return result

        return operation

    @contextlib.contextmanager
    def counting(self) -> Iterator[AccessLog]:
        """Within this block, count atomics (not as a read and a write), barriers per thread,
        shared arrays and their accesses, and warp collectives."""
        global _active
        enable_warp_shuffles(force=True)
        kernelapi = _simulator_module()
        saved = {
            (cls, name): getattr(cls, name)
            for cls, names in (
                (kernelapi.FakeCUDAAtomic, _ATOMICS),
                (kernelapi.FakeCUDAModule, _BARRIERS),
                (kernelapi.FakeCUDAShared, ("array",)),
            )
            for name in names
        }
        for (cls, name), original in saved.items():
            if cls is kernelapi.FakeCUDAAtomic:
                setattr(cls, name, self._atomic(name, original))
            elif cls is kernelapi.FakeCUDAModule:
                setattr(cls, name, self._barrier(original))
        kernelapi.FakeCUDAShared.array = lambda *args, **kwargs: self._shared_array(*args, **kwargs)
        _active = self
        simwarp.observers.append(self)
        try:
            yield self
        finally:
            simwarp.observers.remove(self)
            _active = None
            for (cls, name), original in saved.items():
                setattr(cls, name, original)

    # -- what was seen
    def total(self, counter: Counter, name: str) -> int:
        """Sum of a counter's entries for the array *name*."""
        return sum(count for key, count in counter.items() if key[0] == name)

    def max_atomics_per_bin_and_block(self, name: str) -> int:
        """The most atomics any one block made on any one element of *name* (0 if none)."""
        return max((c for key, c in self.atomics_per_block.items() if key[0] == name), default=0)

    def barrier_range(self) -> tuple[int, int]:
        """(fewest, most) ``cuda.syncthreads()`` any thread reached (0, 0 when nothing ran)."""
        counts = self.barrier_counts.values()
        return (min(counts, default=0), max(counts, default=0))

    def uneven_barriers(self) -> dict[tuple, tuple[int, int, int, int]]:
        """Blocks whose threads reached different numbers of barriers: block -> (fewest, a thread
        with that many, most, a thread with that many)."""
        by_block: dict[tuple, list] = {}
        for (block, tid), count in sorted(self.barrier_counts.items()):
            by_block.setdefault(block, []).append((count, tid))
        found = {}
        for block, counts in by_block.items():
            low, high = min(counts), max(counts, key=lambda c: (c[0], -c[1]))
            if low[0] != high[0]:
                found[block] = (low[0], low[1], high[0], high[1])
        return found

    def racy_shared_writes(self) -> int:
        """Shared elements (per block) written by two threads between the same two barriers."""
        return self.shared.count("write")

    def racy_shared_reads(self) -> int:
        """Shared elements (per block) read by a thread while another wrote them, unordered."""
        return self.shared.count("read")

    def uninitialised_shared_reads(self) -> int:
        """Shared elements (per block) read before any thread of the block wrote them."""
        return self.shared.count("uninitialised")

    def problems(self) -> list[tuple[str, str]]:
        """(kind, one sentence) per kind of synchronisation problem seen, worst first: "barriers"
        (uneven), "write", "read" (races on shared memory), "uninitialised"; empty if none."""
        said = []
        uneven = self.uneven_barriers()
        if uneven:
            block, (low, low_t, high, high_t) = next(iter(uneven.items()))
            text, threads = self.shared.text, self.shared.block_dim
            sentence = (
                f"in block {text(block, self.shared.grid_dim)} thread {text(low_t, threads)} "
                f"reached {low} cuda.syncthreads() but thread {text(high_t, threads)} reached "
                f"{high} ({len(uneven)} block(s) like this): every thread of a block must reach "
                "every barrier, or a GPU hangs or goes on too early. Guard the work, not the "
                "barrier."
            )
            said.append(("barriers", sentence))
        return said + self.shared.problems()
