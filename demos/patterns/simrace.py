"""Races on shared memory, seen in Numba's CUDA simulator: every access by thread and barrier
interval.

The simulator runs a block's threads one at a time, so ``local[v] += 1`` by many
threads counts right there. On a GPU the threads run together and two
read-add-writes of one element lose a count. :class:`SharedWatch` wraps each
shared array and records, per element, who read, wrote or updated it atomically
between two barriers (the thread's count of ``cuda.syncthreads()`` so far), and
in which warp after how many ``cuda.syncwarp()``. Two accesses of one interval
by different threads are a race unless both are reads or both atomics, or a
``syncwarp`` of their warp lies between them; two writes of the same value are
harmless. A read (or atomic) of an element no thread of the block has set yet
reads uninitialised memory.
"""

from __future__ import annotations

import dis
import linecache
import re
import threading
from typing import Any

import numpy as np

from demos.patterns.simwarp import dims_text

state = threading.local()  # .atomic: True while the thread is inside an atomic operation
_VERBS = {"write": "wrote", "read": "read", "atomic": "updated (atomically)"}
_ADVICE = {
    "write": "on a GPU one of the writes is lost (`+=` is a read, an add and a write)",
    "read": "on a GPU the reader may see the value before or after the write",
    "uninitialised": "shared memory starts with whatever was there: set it first",
}


def is_element(index: Any) -> bool:
    if isinstance(index, tuple):
        return all(isinstance(i, (int, np.integer)) for i in index)
    return isinstance(index, (int, np.integer))


def key(index: Any, shape: tuple = ()) -> tuple[int, ...]:
    """An element index as a tuple of ints (negative ones counted from the end when *shape*
    is given)."""
    found = tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)
    if shape and len(shape) == len(found):
        found = tuple(k % s if k < 0 and s else k for k, s in zip(found, shape, strict=True))
    return found


def element_key(array: np.ndarray, index: Any) -> tuple[int, ...] | None:
    """The element *index* picks, as an index into the whole shared array (also through a row
    view such as ``tile[ty][k]``), or None when it picks more than one element."""
    if not is_element(index):
        return None
    found = key(index, array.shape)
    if len(found) != array.ndim:
        return None
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if array.shape == root.shape and array.strides == root.strides:
        return found
    address = array.ctypes.data + sum(i * s for i, s in zip(found, array.strides, strict=True))
    flat = (address - root.ctypes.data) // array.itemsize
    return tuple(int(i) for i in np.unravel_index(flat, root.shape))


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) or (a != a and b != b)  # NaN written twice is the same value


def label(frame: Any) -> str:
    """``name (line N)`` for a shared array: from the line that made it, or (for code without a
    source file, such as exec'd cells) from the store right after the call."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    match = re.match(r"\s*(\w+)\s*=\s*cuda\.shared\.array\(", line)
    name = match.group(1) if match else None
    if name is None and not line:
        after = [i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti]
        if after and after[0].opname in ("STORE_FAST", "STORE_NAME", "STORE_DEREF"):
            name = after[0].argval
    return f"{name or 'a shared array'} (line {frame.f_lineno})"


class _Interval:
    """The accesses of one shared element between two barriers: by thread, (warp, syncwarps)."""

    __slots__ = ("atomics", "epoch", "readers", "writers")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.readers: dict[int, tuple] = {}
        self.writers: dict[int, tuple] = {}  # + (value, whether it changed the element)
        self.atomics: dict[int, tuple] = {}


def _unordered(a: tuple, b: tuple) -> bool:
    """Two accesses of one barrier interval are unordered unless a syncwarp of their warp is
    between."""
    return a[0] != b[0] or a[1] == b[1]


class SharedWatch:
    """The shared arrays of one counted launch, their accesses, and the races among them."""

    def __init__(self, lock: threading.Lock) -> None:
        self.races: dict[str, dict[tuple, str]] = {"write": {}, "read": {}, "uninitialised": {}}
        self.block_dim: tuple = (1, 1, 1)
        self.grid_dim: tuple = (1, 1, 1)
        self._intervals: dict[tuple, _Interval] = {}
        self._written: set[tuple] = set()
        self._classes: dict[tuple, type] = {}
        self._lock = lock

    def view(self, buffer: np.ndarray, site: tuple, frame: Any) -> np.ndarray:
        """*buffer* (the array made at *site*) as a view that reports each element access."""
        cls = self._classes.get(site)
        if cls is None:
            watch = self

            class Shared(np.ndarray):
                def __getitem__(self, index):
                    where = element_key(self, index)
                    if where is not None and not getattr(state, "atomic", False):
                        watch.access(site, where, "read")
                    return super().__getitem__(index)

                def __setitem__(self, index, value):
                    where = element_key(self, index)
                    if where is None or getattr(state, "atomic", False):
                        return super().__setitem__(index, value)
                    old = np.ndarray.__getitem__(self, index)
                    super().__setitem__(index, value)
                    new = np.ndarray.__getitem__(self, index)
                    watch.access(site, where, "write", new, old)

            Shared._course_shared = (site, label(frame))
            cls = self._classes[site] = Shared
        return buffer.view(cls)

    def text(self, index: tuple | int, dims: tuple) -> str:
        """A block or thread (its number in the block) as the launch names it."""
        if isinstance(index, int):
            bx, by, _ = self.block_dim
            index = (index % bx, index // bx % by, index // (bx * by))
        return dims_text(index, dims)

    def access(self, site: tuple, index: tuple, kind: str, value: Any = None, old: Any = None):
        """Record one access ("read", "write", "atomic") of the current thread; note races."""
        thread = threading.current_thread()
        tid, block = thread.thread_id, tuple(thread.blockIdx)
        me = (tid // 32, getattr(thread, "_course_syncwarps", 0))
        epoch = getattr(thread, "_course_barriers", 0)
        element = (block, site, index)
        with self._lock:
            if kind == "write":
                self._written.add(element)
            elif element not in self._written:
                self._note("uninitialised", element, tid, None, kind)
            interval = self._intervals.get(element)
            if interval is None or interval.epoch < epoch:
                interval = self._intervals[element] = _Interval(epoch)
            elif interval.epoch > epoch:
                return  # a thread behind the others at the barriers: reported as uneven barriers
            writes = [
                (t, a, "write") for t, a in interval.writers.items() if a[3] or kind != "read"
            ]
            atomics = [(t, a, "atomic") for t, a in interval.atomics.items()]
            readers = [(t, a, "read") for t, a in interval.readers.items()]
            if kind == "read":
                others = writes + atomics
                interval.readers[tid] = me
            elif kind == "write":
                changed = not _same(value, old)
                others = writes + atomics + (readers if changed else [])
                interval.writers[tid] = (*me, value, changed)
            else:
                others = writes + readers
                interval.atomics[tid] = me
            noted = set()
            for other, access, other_kind in others:
                if other == tid or not _unordered(me, access):
                    continue
                if kind == other_kind == "write" and _same(value, access[2]):
                    continue  # the same value written twice: harmless
                race = "read" if "read" in (kind, other_kind) else "write"
                if race not in noted:
                    noted.add(race)
                    self._note(race, element, tid, other, kind, other_kind)

    def _note(self, race: str, element: tuple, tid: int, other: Any, *kinds: str) -> None:
        found = self.races[race]
        if element in found:
            return
        block, site, index = element
        cls = self._classes.get(site)
        name, _, line = (cls._course_shared[1] if cls else "a shared array").partition(" (")
        cell = f"{name}[{', '.join(map(str, index))}]" + (f" ({line}" if line else "")
        where = f"in block {self.text(block, self.grid_dim)}, thread"
        if race == "uninitialised":
            found[element] = (
                f"{where} {self.text(tid, self.block_dim)} {_VERBS[kinds[0]]} {cell} before any "
                "thread of the block had set it"
            )
        else:
            found[element] = (
                f"{where} {self.text(other, self.block_dim)} {_VERBS[kinds[1]]} {cell} and thread "
                f"{self.text(tid, self.block_dim)} {_VERBS[kinds[0]]} it between the same two "
                "barriers"
            )

    def count(self, race: str) -> int:
        """Shared elements (per block) with a race of kind "write", "read" or "uninitialised"."""
        return len(self.races[race])

    def problems(self) -> list[tuple[str, str]]:
        """(kind, a sentence naming the first case) for each kind of race seen."""
        said = []
        for race, advice in _ADVICE.items():
            found = self.races[race]
            if found:
                more = f" ({len(found)} elements like this)" if len(found) > 1 else ""
                said.append((race, f"{next(iter(found.values()))}{more}: {advice}."))
        return said
