"""The helper objects :mod:`.serve` hands to a student's function, with records kept out of reach.

The grader asks how a student's function used the objects it was given: how
often it waited for the counting module, the order in which it copied data to
and from the devices. Those records live in the student's process, so they
are kept where ordinary code cannot write: in closures, never in an attribute
the function can read, reset or replace. What the function *can* reach (the
counting module's ``counter``, a device's ``log`` and ``received``) still works
as in the chapters, but is the student's copy: changing it changes nothing the
grader reads. A closure is only reachable through dunder attributes
(``__closure__``, ``__dict__``), which the grader's source gate
(``grader/verdicts/source_gate.py``) refuses in the student's cells.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any


def counting(module: Any) -> tuple[Any, Callable[[], dict], Callable[[Any], Any]]:
    """(the counting module to hand over, a function that reads what it counted, a guard).

    *module* is a fresh :class:`demos.profiling.sync_counter.SyncCountingModule`.
    Its counter (shared with every array it makes) is replaced by one that
    adds every increase to a tally in this closure: resetting, clearing or
    lowering the counter afterwards lowers nothing the grader reads.

    ``guard(array)`` is *array* as host data that only this module's
    ``asarray`` copies to the device unnoticed: any other way to its values
    (NumPy, indexing, iterating) is counted as a host read, so work done on
    the host beside a few throw-away device operations shows.
    """
    counter, read_counter = _tallied_counter()
    module._counter = counter  # before any array exists: every array shares this one
    host_reads, uploading = [0], [False]

    class HostData:
        """Host data handed to the student's function: its values only through ``xp.asarray``."""

        __slots__ = ()

        @property
        def shape(self) -> tuple[int, ...]:
            return data[self].shape

        @property
        def dtype(self) -> Any:
            return data[self].dtype

        @property
        def ndim(self) -> int:
            return data[self].ndim

        def __len__(self) -> int:
            return len(data[self])

        def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
            if not uploading[0]:
                host_reads[0] += 1
            return data[self] if dtype is None else data[self].astype(dtype)

        def __getattr__(self, name: str) -> Any:
            host_reads[0] += 1
            return getattr(data[self], name)

        def __getitem__(self, index: Any) -> Any:
            host_reads[0] += 1
            return data[self][index]

    data: dict[Any, Any] = {}

    def guard(array: Any) -> Any:
        import numpy as np

        wrapped = HostData()
        data[wrapped] = np.array(array, copy=True)
        return wrapped

    def upload(value: Any, *args: Any, **kwargs: Any) -> Any:
        uploading[0] = True
        try:
            host = value.__array__() if isinstance(value, HostData) else value
        finally:
            uploading[0] = False
        return module.asarray(host, *args, **kwargs)

    def read() -> dict:
        return {**read_counter(), "host_reads": host_reads[0]}

    class CountingModule:
        """The counting module as handed over: ``counter`` is a snapshot, nothing can be set."""

        __slots__ = ()

        @property
        def counter(self) -> Any:
            return _plain(counter)

        def __getattr__(self, name: str) -> Any:
            return upload if name in ("asarray", "array") else getattr(module, name)

        def __setattr__(self, name: str, value: Any) -> None:
            raise AttributeError("the counting module is read-only")

    return CountingModule(), read, guard


def _plain(counter: Any) -> Any:
    """A plain :class:`SyncCounter` with *counter*'s numbers (for the student to read)."""
    from demos.profiling.sync_counter import SyncCounter

    snapshot = SyncCounter()
    snapshot.transfers.update(dict(counter.transfers))
    snapshot.uploads, snapshot.operations = counter.uploads, counter.operations
    return snapshot


def _tallied_counter() -> tuple[Any, Callable[[], dict]]:
    from demos.profiling.sync_counter import SyncCounter

    tally = {"uploads": 0, "operations": 0}
    transfers: Counter = Counter()

    class Transfers(Counter):
        def __setitem__(self, key: Any, value: Any) -> None:
            transfers[key] += max(0, value - self.get(key, 0))
            super().__setitem__(key, value)

    class TalliedCounter(SyncCounter):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in tally:
                tally[name] += max(0, value - getattr(self, name, 0))
            elif name == "transfers":
                value = Transfers(value)
            object.__setattr__(self, name, value)

    def read() -> dict:
        return {
            "syncs": sum(transfers.values()),
            "uploads": tally["uploads"],
            "operations": tally["operations"],
            "transfers": dict(transfers),
        }

    return TalliedCounter(), read


def recording_devices(made: list) -> Callable[[], dict]:
    """Make *made* (devices sharing a log) record their copies here; returns the report.

    Each device becomes an instance of a subclass of its own class whose
    ``asarray``/``asnumpy`` add to a list in this closure, after doing what
    they always did (the device's own ``log``, which the student may read or
    clear, is kept as before). The report is what the grader read before:
    each device's received pieces and the order of copies.
    """
    events: list[list] = []
    received: list[list] = [[] for _ in made]
    bases = [type(device) for device in made]
    for index, (device, base) in enumerate(zip(made, bases)):
        device.__class__ = _recording_class(base, index, events, received)

    def report() -> dict:
        # the class's own copy back: adds nothing to the log, which is the student's record
        return {
            "received": [
                [base._to_host(device, a) for a in pieces]
                for device, base, pieces in zip(made, bases, received)
            ],
            "events": [list(e) for e in events],
        }

    return report


def _recording_class(base: type, index: int, events: list, received: list) -> type:
    def asarray(self: Any, host_array: Any) -> Any:
        array = base.asarray(self, host_array)  # raises unless this device is current
        received[index].append(array)
        events.append(("to_device", index))
        return array

    def asnumpy(self: Any, array: Any) -> Any:
        events.append(("to_host", index))
        return base.asnumpy(self, array)

    namespace = {"asarray": asarray, "asnumpy": asnumpy, "__qualname__": base.__qualname__}
    namespace["__doc__"], namespace["__module__"] = base.__doc__, base.__module__
    return type(base.__name__, (base,), namespace)
