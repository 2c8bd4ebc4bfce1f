"""Loads in flight, counted in the simulator: what a sum kernel asks of memory before it waits.

A kernel that only reads is limited by how many bytes it has requested and not
yet received (Little's law: rate = bytes in flight / latency). The simulator runs
Python, so it cannot time that; it can watch the order of a thread's work. Here
every element read from the traced input is handed to the kernel as a
:class:`Loaded` value that notes when arithmetic first uses it. A thread that
loads four values and then adds them had four loads waiting at once; one that
adds each value before it loads the next (``acc += values[i]; acc +=
values[i + stride]``) never had more than one. The compiler may reorder such a
chain on a GPU, but a kernel that writes its loads independently does not need
it to.

:func:`wide_sum_report` runs ``kernel[blocks, threads](values, partial)`` so
counted and returns plain numbers: the partial sums, how often each value was
read, the most loads any thread had waiting, how far apart neighbouring threads'
loads were (1: coalesced), writes per block sum, and the synchronisation fields
of :func:`demos.patterns.reports.synchronisation`.
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from demos.patterns.reports import synchronisation
from demos.patterns.simrace import is_element, key
from demos.patterns.simulator import AccessLog, simulated
from demos.patterns.simwarp import undefined_like

__all__ = ["Loaded", "LoadTrace", "wide_sum_report"]


class LoadTrace:
    """Per thread: the input indices it loaded, in order, and the most loads it had unused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.indices: dict[tuple, list[int]] = {}
        self.waiting: dict[tuple, int] = {}
        self.most_waiting: dict[tuple, int] = {}
        #: Input indices whose load was used in arithmetic again after its first use: a
        #: register kept past its iteration (a ``got[k]`` the last group did not load).
        self.reused: Counter = Counter()

    @staticmethod
    def _thread() -> tuple:
        thread = threading.current_thread()
        return (tuple(getattr(thread, "blockIdx", (0, 0, 0))), getattr(thread, "thread_id", 0))

    def loaded(self, index: int) -> tuple:
        who = self._thread()
        with self._lock:
            self.indices.setdefault(who, []).append(index)
            self.waiting[who] = self.waiting.get(who, 0) + 1
            self.most_waiting[who] = max(self.most_waiting.get(who, 0), self.waiting[who])
        return who

    def used(self, who: tuple) -> None:
        with self._lock:
            self.waiting[who] -= 1

    def loads_in_flight(self) -> int:
        """The most loads any thread had issued and not yet used (0 if none loaded)."""
        return max(self.most_waiting.values(), default=0)

    def lane_gap(self) -> int | None:
        """The most common distance between the k-th loads of neighbouring threads of a warp.

        1 when a warp's k-th load reads consecutive elements (coalesced); LOADS when
        each thread reads its own run of LOADS neighbours. None with too few loads.
        """
        gaps: Counter = Counter()
        for (block, tid), mine in self.indices.items():
            if tid % 32 == 31:
                continue  # the last lane of a warp has no neighbour in it
            theirs = self.indices.get((block, tid + 1), [])
            gaps.update(b - a for a, b in zip(mine, theirs))
        return gaps.most_common(1)[0][0] if gaps else None


class Loaded:
    """An element read from the traced input; its first use in arithmetic ends its wait.

    It behaves as the number it holds. NumPy defers to it (``__array_ufunc__ =
    None``), so ``float32(0) + value`` comes here too. Converting it
    (``float(value)``, storing it in a float array) returns the number without
    counting a use: only arithmetic and comparisons wait for the data.
    """

    __slots__ = ("_index", "_trace", "_value", "_who")
    __array_ufunc__ = None

    def __init__(self, value: Any, trace: LoadTrace, index: int) -> None:
        self._value, self._trace, self._index = value, trace, index
        self._who: tuple | None = trace.loaded(index)

    def take(self) -> Any:
        """The number, noting the first use (and any later one, in :attr:`LoadTrace.reused`)."""
        if self._who is not None:
            self._trace.used(self._who)
            self._who = None
        else:
            with self._trace._lock:
                self._trace.reused[self._index] += 1
        return self._value

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __repr__(self) -> str:
        return f"Loaded({self._value!r})"


def _plain(value: Any) -> Any:
    return value.take() if isinstance(value, Loaded) else value


def _binary(op: Any) -> tuple[Any, Any]:
    def forward(self: Loaded, other: Any) -> Any:
        return op(self.take(), _plain(other))

    def reverse(self: Loaded, other: Any) -> Any:
        return op(_plain(other), self.take())

    return forward, reverse


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    _forward, _reverse = _binary(getattr(operator, _name))
    setattr(Loaded, f"__{_name}__", _forward)
    setattr(Loaded, f"__r{_name}__", _reverse)
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Loaded, f"__{_name}__", _binary(getattr(operator, _name))[0])
for _name in ("neg", "pos", "abs"):
    setattr(Loaded, f"__{_name}__", lambda self, op=getattr(operator, _name): op(self.take()))
Loaded.__bool__ = lambda self: bool(self.take())  # type: ignore[attr-defined]
Loaded.__hash__ = None  # type: ignore[assignment]


def _traced(log: AccessLog, values: np.ndarray, trace: LoadTrace) -> np.ndarray:
    """*values* counted by *log* (as ``"values"``), each element read handed out as Loaded."""
    counted = type(log.wrap(values, "values"))

    class Traced(counted):
        def __getitem__(self, index):
            got = super().__getitem__(index)
            if is_element(index) and not isinstance(got, np.ndarray):
                return Loaded(got, trace, key(index)[0])
            return got

    return np.asarray(values).view(Traced)


@contextlib.contextmanager
def _local_arrays_keep_loads() -> Iterator[None]:
    """``cuda.local.array`` holds Loaded values as they are (an object array), so a load kept in
    a register array waits until the kernel adds it, as on a GPU; it starts as uninitialised
    registers might (NaN or 0x5A5A), as every local array of the course's simulator does."""
    from numba.cuda.simulator import kernelapi

    original = kernelapi.FakeCUDALocal.array

    def array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> np.ndarray:
        plain = original(self, shape, dtype)
        return np.full(plain.shape, undefined_like(plain.dtype.type(0)), dtype=object)

    kernelapi.FakeCUDALocal.array = array
    try:
        yield
    finally:
        kernelapi.FakeCUDALocal.array = original


def run_wide_sum(
    kernel: Any, values: np.ndarray, blocks: int, threads: int
) -> tuple[dict[str, Any], AccessLog]:
    """:func:`wide_sum_report` and the log behind it (for checks that explain what they saw)."""
    log, trace = AccessLog(), LoadTrace()
    values = np.ascontiguousarray(values)
    wrapped = _traced(log, values, trace)
    partial = log.wrap(np.zeros(blocks, values.dtype), "partial")
    with log.counting(), _local_arrays_keep_loads():
        simulated(kernel)[blocks, threads](wrapped, partial)
    reads = np.zeros(len(values), np.int64)
    for (name, index), count in log.reads.items():
        if name == "values":
            reads[index[0]] = count
    writes = [log.writes.get(("partial", (b,)), 0) for b in range(blocks)]
    report = {
        "partial": np.asarray(partial).copy(),
        "reads": reads,
        "loads_in_flight": trace.loads_in_flight(),
        "lane_gap": trace.lane_gap(),
        "reused_loads": dict(trace.reused),
        "most_writes_to_a_block_sum": max(writes, default=0),
        "atomics": log.total(log.atomics, "partial"),
        **synchronisation(log, blocks, threads),
    }
    return report, log


def wide_sum_report(kernel: Any, values: np.ndarray, blocks: int, threads: int) -> dict[str, Any]:
    """Run ``kernel[blocks, threads](values, partial)`` counted; what it did.

    ``partial`` (one sum per block expected; their total is the sum), ``reads``
    (per element of *values*: 1 for a right kernel), ``loads_in_flight`` (the
    most loads one thread issued before using any of them), ``lane_gap`` (see
    :meth:`LoadTrace.lane_gap`), ``most_writes_to_a_block_sum``, ``atomics`` (on
    ``partial``) and the fields of :func:`~demos.patterns.reports.synchronisation`.
    """
    return run_wide_sum(kernel, values, blocks, threads)[0]
