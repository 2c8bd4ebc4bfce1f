"""Warp collectives for Numba's CUDA simulator: shuffles, votes and ``syncwarp`` among 32 lanes.

The simulator runs every thread of a block as a Python thread but knows no
warps: it has no ``cuda.shfl_*_sync`` or ``cuda.syncwarp``. Here the lanes of a
warp (32 consecutive threads of the block, x fastest, as on a GPU) meet at each
collective: every lane named in the mask hands in its value, waits until all of
them have, and takes the value its shuffle asks for. The block's barrier is not
involved, so a warp may shuffle while the other warps have finished or wait at
``cuda.syncthreads()``.

What a GPU leaves undefined is made loud: a lane that calls a collective with a
mask leaving itself out, lanes of one mask calling different collectives, or a
lane named in the mask that has returned, waits at a barrier or never comes
(a hang on a GPU) stop the kernel with a sentence that says so. A shuffle that
reads a lane outside the mask (or past the block's last thread) gets a poison
value (NaN, or the integer 0x5A5A), as a GPU would hand it something undefined.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any

import numpy as np

FULL_MASK = 0xFFFFFFFF
_POISON_INT = 0x5A5A  # 23130: clearly wrong, and far from overflowing when added up
_WAIT_S = 0.05  # how often a waiting lane looks for a hang or an abort

_registry_lock = threading.Lock()
observers: list[Any] = []  # AccessLog-like objects counting collectives (see simulator.py)


class WarpError(RuntimeError):
    """A warp collective used in a way a GPU leaves undefined (or that hangs there)."""


def _manager_state(manager: Any) -> dict:
    with _registry_lock:
        state = manager.__dict__.get("_course_warps")
        if state is None:
            state = {"cond": threading.Condition(), "threads": {}, "ops": {}, "failed": None}
            manager.__dict__["_course_warps"] = state
        return state


def register_thread(thread: Any) -> None:
    """Remember a simulator thread by its id in the block (so waiting lanes can see it end)."""
    _manager_state(thread._manager)["threads"][thread.thread_id] = thread


def run_thread(thread: Any, original: Any) -> None:
    """Run a simulator thread, marking when it started and when it returned (or failed)."""
    thread._course_started = True
    try:
        original(thread)
    finally:
        thread._course_done = True
        state = _manager_state(thread._manager)
        with state["cond"]:
            state["cond"].notify_all()


def _done(thread: Any) -> bool:
    return getattr(thread, "_course_done", False)


def dims_text(index: tuple, dims: tuple) -> str:
    """A block or thread index as the launch has it: ``3`` in 1-D, ``(3, 1)`` in 2-D."""
    used = 3 if dims[2] > 1 else 2 if dims[1] > 1 else 1
    return str(index[0]) if used == 1 else str(tuple(index[:used]))


def block_size(thread: Any) -> int:
    return int(np.prod(thread._manager._block_dim))


def undefined_like(value: Any) -> Any:
    """What a read of an inactive lane gives here: NaN for floats, 0x5A5A for integers."""
    kind = np.asarray(value).dtype.kind
    if kind == "b":
        return value
    if kind in "fc":
        return type(value)(np.nan) if isinstance(value, np.generic) else float("nan")
    if kind in "iu":
        if not isinstance(value, np.generic):
            return _POISON_INT
        return np.array(_POISON_INT).astype(value.dtype)[()]  # wrapped to fit int8, uint8
    return value


class _Collective:
    """One meeting of the lanes of a mask: who came, with what, and who has left again."""

    def __init__(self, kind: str, expected: frozenset[int]) -> None:
        self.kind = kind
        self.expected = expected
        self.arrived: dict[int, tuple[str, Any, int]] = {}
        self.left: set[int] = set()

    @property
    def complete(self) -> bool:
        return self.expected <= self.arrived.keys()


def _describe(thread: Any, state: dict) -> str:
    """What a lane that has not come is doing instead."""
    if thread is None or not getattr(thread, "_course_started", False):
        return "has not started"
    if _done(thread):
        return "has returned"
    if thread.syncthreads_blocked:
        return "waits at cuda.syncthreads()"
    waiting = getattr(thread, "_course_waiting", None)
    if waiting is not None:
        return f"waits at another {waiting}"
    return "is still running"


def _stuck(state: dict, size: int) -> bool:
    """True when no thread of the block can move: all returned, at a barrier, or in a collective
    that cannot complete."""
    threads = state["threads"]
    if len(threads) < size:
        return False
    for t in threads.values():
        if not getattr(t, "_course_started", False):
            return False
        if _done(t) or t.syncthreads_blocked:
            continue
        key = getattr(t, "_course_waiting_key", None)
        op = state["ops"].get(key) if key is not None else None
        if op is None or op.complete:
            return False
    return True


def _collective(name: str, mask: Any, value: Any = None, arg: int = 0) -> dict[int, Any]:
    """Meet the other lanes of *mask*; the values every lane handed in, by lane."""
    thread = threading.current_thread()
    tid = thread.thread_id
    lane, warp = tid % 32, tid // 32
    mask = int(mask) & FULL_MASK
    block = dims_text(tuple(thread.blockIdx), thread._manager._grid_dim)
    where = f"lane {lane} of warp {warp} (thread {tid}) in block {block}"
    if not (mask >> lane) & 1:
        raise WarpError(
            f"{where} called cuda.{name} with mask {mask:#010x}, which leaves it out: "
            "the mask names the lanes that take part, the caller included."
        )
    size = block_size(thread)
    expected = frozenset(i for i in range(32) if (mask >> i) & 1 and warp * 32 + i < size)
    counts = thread.__dict__.setdefault("_course_counts", Counter())
    key = (warp, mask, counts[mask])
    counts[mask] += 1
    for observer in list(observers):
        observer.warp_collective(name)
    state = _manager_state(thread._manager)
    cond = state["cond"]
    with cond:
        op = state["ops"].get(key)
        if op is None:
            op = state["ops"][key] = _Collective(name, expected)
        if op.kind != name:
            raise WarpError(
                f"{where} called cuda.{name} while other lanes of mask {mask:#010x} called "
                f"cuda.{op.kind}: all lanes of a mask must call the same warp function together."
            )
        op.arrived[lane] = (name, value, int(arg))
        thread._course_waiting, thread._course_waiting_key = f"cuda.{name}", key
        if op.complete:
            cond.notify_all()
        try:
            while not op.complete:
                if state["failed"] is not None or thread.abort:
                    raise WarpError(state["failed"] or "another thread of the block failed")
                if cond.wait(_WAIT_S) or op.complete:
                    continue
                for other in sorted(expected - op.arrived.keys()):
                    peer = state["threads"].get(warp * 32 + other)
                    if peer is not None and _done(peer):
                        raise WarpError(
                            f"{where} waits in cuda.{name} for lane {other}, which has returned: "
                            "every lane named in the mask must reach the same warp function."
                        )
                if _stuck(state, size):
                    missing = sorted(expected - op.arrived.keys())
                    doing = _describe(state["threads"].get(warp * 32 + missing[0]), state)
                    state["failed"] = (
                        f"{where} waits in cuda.{name} (mask {mask:#010x}) for lane {missing[0]}, "
                        f"which {doing}: on a GPU this hangs. Every lane named in the mask must "
                        "call the same warp functions in the same order."
                    )
                    cond.notify_all()
                    raise WarpError(state["failed"])
        finally:
            thread._course_waiting = thread._course_waiting_key = None
        values = {other: v for other, (_, v, _) in op.arrived.items()}
        op.left.add(lane)
        if op.left >= op.expected:
            del state["ops"][key]
    return values


def _shuffle(name: str, mask: Any, value: Any, source: int) -> Any:
    thread = threading.current_thread()
    lane = thread.thread_id % 32
    values = _collective(name, mask, value, source)
    if source < 0 or source > 31:  # past the warp's end: a GPU returns the lane's own value
        return value
    if source not in values:
        return undefined_like(value)
    return values[source] if source != lane else value


def shfl_sync(self: Any, mask: int, value: Any, src_lane: int) -> Any:
    """The value of lane *src_lane* (taken modulo 32, as a GPU does)."""
    return _shuffle("shfl_sync", mask, value, int(src_lane) & 31)


def shfl_up_sync(self: Any, mask: int, value: Any, delta: int) -> Any:
    """The value of lane ``lane - delta`` (the own value below lane 0)."""
    lane = threading.current_thread().thread_id % 32
    return _shuffle("shfl_up_sync", mask, value, lane - int(delta))


def shfl_down_sync(self: Any, mask: int, value: Any, delta: int) -> Any:
    """The value of lane ``lane + delta`` (the own value past lane 31)."""
    lane = threading.current_thread().thread_id % 32
    return _shuffle("shfl_down_sync", mask, value, lane + int(delta))


def shfl_xor_sync(self: Any, mask: int, value: Any, lane_mask: int) -> Any:
    """The value of lane ``lane ^ lane_mask`` (the butterfly of a warp reduction)."""
    lane = threading.current_thread().thread_id % 32
    return _shuffle("shfl_xor_sync", mask, value, lane ^ int(lane_mask))


def syncwarp(self: Any, mask: int = FULL_MASK) -> None:
    """Wait for the lanes of *mask*; their shared-memory writes before it are seen after it."""
    _collective("syncwarp", mask)
    thread = threading.current_thread()
    thread._course_syncwarps = getattr(thread, "_course_syncwarps", 0) + 1


def ballot_sync(self: Any, mask: int, predicate: Any) -> int:
    """A 32-bit mask with the bits of the lanes whose predicate is true."""
    values = _collective("ballot_sync", mask, bool(predicate))
    return sum(1 << lane for lane, v in values.items() if v)


def any_sync(self: Any, mask: int, predicate: Any) -> int:
    return int(any(_collective("any_sync", mask, bool(predicate)).values()))


def all_sync(self: Any, mask: int, predicate: Any) -> int:
    return int(all(_collective("all_sync", mask, bool(predicate)).values()))


def eq_sync(self: Any, mask: int, value: Any) -> int:
    return int(
        len({np.asarray(v).item() for v in _collective("eq_sync", mask, value).values()}) == 1
    )


def lanemask_lt(self: Any) -> int:
    """The bits of the lanes below this one."""
    return (1 << (threading.current_thread().thread_id % 32)) - 1


def activemask(self: Any) -> int:
    """The lanes of this warp that exist in the block, as in a converged warp. (A GPU leaves out
    lanes on the other side of a branch or returned; the simulator, running one thread at a
    time, cannot tell which those would be.)"""
    thread = threading.current_thread()
    first = thread.thread_id // 32 * 32
    return sum(1 << lane for lane in range(min(32, block_size(thread) - first)))


# --- the addresses a warp touches: for checks that explain coalescing and bank conflicts ---
def note_request(
    requests: dict, lock: Any, kind: str, name: str, array: np.ndarray, index: Any
) -> None:
    """Note the byte address of one element access in *requests*, under the kernel line that
    made it and the number of times this thread has been there: the lanes of a warp there for
    the n-th time make one request, as a warp issues it. (An AccessLog with trace_addresses.)"""
    from demos.patterns.simrace import element_key  # simrace imports this module

    where = element_key(array, index)
    if where is None:
        return
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not all(0 <= w < s for w, s in zip(where, root.shape, strict=True)):
        return  # out of bounds: the access itself raises
    address = int(np.ravel_multi_index(where, root.shape)) * root.itemsize
    caller = sys._getframe(1)
    while caller.f_back is not None and (  # up to the kernel's own line
        caller.f_code.co_name in ("__getitem__", "__setitem__")
        or "numba" in caller.f_code.co_filename
    ):
        caller = caller.f_back
    position = (caller.f_code, caller.f_lineno)  # a line: its offsets may differ between lanes
    thread = threading.current_thread()
    visits = thread.__dict__.setdefault("_course_visits", Counter())
    nth = visits[(kind, name, position)]
    visits[(kind, name, position)] += 1
    tid = getattr(thread, "thread_id", 0)
    block = tuple(getattr(thread, "blockIdx", (0, 0, 0)))
    with lock:
        requests.setdefault((kind, name, block, tid // 32, position, nth), {})[tid % 32] = address


def traced_shared(view: np.ndarray, requests: dict, lock: Any) -> np.ndarray:
    """*view* (a watched shared array) noting the address of each element access too."""
    label = type(view)._course_shared[1]

    class Traced(type(view)):
        def __getitem__(self, index):
            note_request(requests, lock, "shared read", label, self, index)
            return super().__getitem__(index)

        def __setitem__(self, index, value):
            note_request(requests, lock, "shared write", label, self, index)
            super().__setitem__(index, value)

    return view.view(Traced)


def warp_requests(requests: dict) -> list[tuple[str, str, int, dict[int, int]]]:
    """(kind, array, kernel line, {lane: byte address}) for each request a warp made; kind is
    "global read", "global write", "shared read" or "shared write", the array an argument's
    name or a shared array's ``name (line N)``."""
    return [
        (kind, name, line, lanes)
        for (kind, name, _block, _warp, (_code, line), _nth), lanes in requests.items()
    ]


def bank_conflict_degree(addresses: dict[int, int], banks: int = 32, word: int = 4) -> int:
    """How many times a shared-memory request is replayed: the most distinct words the lanes
    ask of one bank (1: none; lanes reading one word share it, a broadcast)."""
    words_by_bank: dict[int, set[int]] = {}
    for address in addresses.values():
        words_by_bank.setdefault(address // word % banks, set()).add(address // word)
    return max((len(w) for w in words_by_bank.values()), default=1)


def sectors(addresses: dict[int, int], itemsize: int = 4, size: int = 32) -> tuple[int, int]:
    """(32-byte sectors a global request touches, the fewest its bytes could fit in)."""
    touched = {a // size for a in addresses.values()}
    return len(touched), max(1, -(-len(set(addresses.values())) * itemsize // size))


COLLECTIVES = {
    "shfl_sync": shfl_sync,
    "shfl_up_sync": shfl_up_sync,
    "shfl_down_sync": shfl_down_sync,
    "shfl_xor_sync": shfl_xor_sync,
    "syncwarp": syncwarp,
    "ballot_sync": ballot_sync,
    "any_sync": any_sync,
    "all_sync": all_sync,
    "eq_sync": eq_sync,
    "lanemask_lt": lanemask_lt,
    "activemask": activemask,
}
