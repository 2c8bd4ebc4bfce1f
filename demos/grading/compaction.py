"""Counted launches of the ``scan_transfer`` assignment's kernels: stream compaction by a scan.

The assignment keeps the values above a threshold, in their order, in two
kernels: ``count_kernel(values, counts)`` (each block counts the survivors of
its tile, a block reduction) and ``compact_kernel(values, offsets, out)``
(each block scans its tile's keep flags in shared memory and writes each
survivor to ``out[offsets[block] + its rank]``). Block ``b`` looks after the
elements ``b * block ... b * block + block - 1``, one per thread.

What decides a grade is whether the kernels would work on a GPU, which the
simulator hides: it runs one thread at a time, so an atomic counter hands out
slots in order and a racy scan adds up right. The reports therefore run a
kernel in the simulator (:func:`demos.patterns.simulator.simulated`, on every
machine) and count, besides the result, which thread read each value and
wrote each output, every atomic, the shared reads of each thread and the
synchronisation fields of :func:`demos.patterns.reports.synchronisation`.
The callers (visible and hidden tests) decide what is good enough.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import numpy as np

from demos.patterns.reports import synchronisation
from demos.patterns.simrace import is_element, key, state
from demos.patterns.simulator import AccessLog, simulated


def exclusive_offsets(counts: np.ndarray) -> np.ndarray:
    """Where each block's survivors start in the output: the exclusive prefix sum of *counts*."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)


def expected_counts(values: np.ndarray, threshold: float, block: int) -> np.ndarray:
    """The survivors (values strictly above *threshold*) in each tile of *block* values."""
    blocks = -(-len(values) // block)
    keep = np.asarray(values) > threshold
    return np.bincount(np.flatnonzero(keep) // block, minlength=blocks).astype(np.int32)


def compacted(values: np.ndarray, threshold: float) -> np.ndarray:
    """NumPy's answer: the values strictly above *threshold*, in their order."""
    values = np.asarray(values)
    return values[values > threshold]


def readings(
    rng: np.random.Generator, n: int, threshold: float, keep: float, ties: bool = True
) -> np.ndarray:
    """*n* float32 readings of which about a share *keep* lies above *threshold*.

    With *ties*, a tenth of the rest equal the threshold exactly (they must be
    dropped: the test is ``>``); the others lie at least 0.01 away from it, so
    float32 and float64 comparisons agree. The tests of *how* a kernel works use
    no ties, so that ``>=`` for ``>`` costs the values' points only.
    """
    above = rng.random(n) < keep
    spread = rng.uniform(0.01, 2.0, n)
    values = np.where(above, threshold + spread, threshold - spread)
    if ties:
        values[~above & (rng.random(n) < 0.1)] = threshold
    return values.astype(np.float32)


class _Threads:
    """Which simulated threads read and wrote each element of the arrays it wraps."""

    def __init__(self, log: AccessLog) -> None:
        self.log = log
        self.readers: dict[tuple[str, int], set[tuple[int, int]]] = {}
        self.writers: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def wrap(self, array: np.ndarray, name: str) -> np.ndarray:
        """*array* counted by the log and by thread (``(block x, thread x)`` of 1-D launches)."""
        counted = type(self.log.wrap(array, name))
        me = self

        def note(table: dict, index: Any, add: Any) -> None:
            thread = threading.current_thread()
            if not is_element(index) or getattr(state, "atomic", False):
                return
            if not hasattr(thread, "blockIdx"):  # the simulator's own copies, not a kernel's
                return
            element = (name, key(index)[0])
            add(table, element, (int(thread.blockIdx.x), int(thread.threadIdx.x)))

        def reader(table: dict, element: tuple, thread: tuple) -> None:
            table.setdefault(element, set()).add(thread)

        def writer(table: dict, element: tuple, thread: tuple) -> None:
            table.setdefault(element, []).append(thread)

        class ByThread(counted):
            def __getitem__(self, index):
                note(me.readers, index, reader)
                return super().__getitem__(index)

            def __setitem__(self, index, value):
                note(me.writers, index, writer)
                super().__setitem__(index, value)

        return np.asarray(array).view(ByThread)

    def strangers(self, name: str, n: int, block: int) -> int:
        """Elements of *name* read by a thread other than their owner (thread i % block of
        block i // block)."""
        return sum(
            1 for i in range(n) if self.readers.get((name, i), set()) - {(i // block, i % block)}
        )


def _shared_reads_by_thread(log: AccessLog) -> Counter:
    """Count each thread's shared-memory reads, from now on (the watch's own record is kept)."""
    reads: Counter = Counter()
    record = log.shared.access

    def access(site: tuple, index: tuple, kind: str, *more: Any) -> None:
        if kind == "read":
            thread = threading.current_thread()
            reads[(tuple(thread.blockIdx), thread.thread_id)] += 1
        record(site, index, kind, *more)

    log.shared.access = access  # type: ignore[method-assign]
    return reads


def _launch(
    kernel: Any, arrays: list[tuple[np.ndarray, str]], blocks: int, threads: int
) -> tuple[AccessLog, list[np.ndarray], _Threads, Counter]:
    """Run ``kernel[blocks, threads](*arrays)`` counted; the log, the wrapped arrays and the
    per-thread records."""
    log = AccessLog()
    who = _Threads(log)
    wrapped = [who.wrap(np.ascontiguousarray(a), name) for a, name in arrays]
    shared_reads = _shared_reads_by_thread(log)
    with log.counting():
        simulated(kernel)[int(blocks), int(threads)](*wrapped)
    return log, wrapped, who, shared_reads


def _common(
    log: AccessLog, who: _Threads, n: int, blocks: int, threads: int, reads: Counter
) -> dict[str, int]:
    """What both reports hold: how the values were read, atomics, shared memory, barriers."""
    counts = [log.reads.get(("values", (i,)), 0) for i in range(n)]
    return {
        "fewest_reads_of_a_value": min(counts, default=0),
        "most_reads_of_a_value": max(counts, default=0),
        "values_read_by_another_thread": who.strangers("values", n, threads),
        "atomics": sum(log.atomic_functions.values()),
        "shared_arrays": log.shared_arrays,
        "most_shared_reads_by_a_thread": max(reads.values(), default=0),
        **synchronisation(log, blocks, threads),
    }


def count_report(kernel: Any, values: np.ndarray, threads: int) -> dict:
    """Run ``kernel[blocks, threads](values, counts)``, one block per tile, counted.

    ``counts`` (starting at -1, so a block that writes nothing shows), the read
    counts of the values, ``values_read_by_another_thread`` (0 when each thread
    reads only its own element), ``writes_to_counts`` and
    ``most_writes_of_a_count``, ``atomics`` (every ``cuda.atomic`` call, shared
    or global), ``global_atomics_on_counts``, ``shared_arrays``,
    ``most_shared_reads_by_a_thread`` and the fields of
    :func:`~demos.patterns.reports.synchronisation`.
    """
    values = np.asarray(values)
    blocks = max(1, -(-len(values) // threads))
    log, (_, counts), who, reads = _launch(
        kernel, [(values, "values"), (np.full(blocks, -1, np.int32), "counts")], blocks, threads
    )
    writes = [log.writes.get(("counts", (b,)), 0) for b in range(blocks)]
    return {
        "counts": np.asarray(counts).copy(),
        **_common(log, who, len(values), blocks, threads, reads),
        "writes_to_counts": sum(writes),
        "most_writes_of_a_count": max(writes, default=0),
        "global_atomics_on_counts": log.total(log.atomics, "counts"),
    }


def compact_report(
    kernel: Any, values: np.ndarray, offsets: np.ndarray, threshold: float, threads: int
) -> dict:
    """Run ``kernel[blocks, threads](values, offsets, out)``, one block per tile, counted.

    ``out`` (as long as *values*, starting as NaN: what no thread wrote stays
    NaN), the read counts of the values, ``values_read_by_another_thread``,
    ``writes_to_out`` and ``most_writes_of_an_output``,
    ``outputs_written_by_another_thread`` (survivor ``k`` of the input, in
    order, is the owner thread's to write to ``out[k]``: 0 for a scan, more
    for an atomic counter or one thread writing its block's survivors),
    ``atomics``, ``shared_arrays``, ``most_shared_reads_by_a_thread`` (about
    2 log2(threads) for a scan, up to *threads* for a loop over the earlier
    flags) and the fields of :func:`~demos.patterns.reports.synchronisation`.
    """
    values = np.asarray(values)
    blocks = max(1, -(-len(values) // threads))
    arrays = [
        (values, "values"),
        (np.asarray(offsets), "offsets"),
        (np.full(len(values), np.nan, values.dtype), "out"),
    ]
    log, (_, _, out), who, reads = _launch(kernel, arrays, blocks, threads)
    survivors = np.flatnonzero(values > threshold)
    writers = [who.writers.get(("out", k), []) for k in range(len(values))]
    misplaced = sum(
        1 for k, i in enumerate(survivors) if writers[k] != [(int(i) // threads, int(i) % threads)]
    )
    return {
        "out": np.asarray(out).copy(),
        **_common(log, who, len(values), blocks, threads, reads),
        "writes_to_out": log.total(log.writes, "out"),
        "most_writes_of_an_output": max((len(w) for w in writers), default=0),
        "outputs_written_by_another_thread": misplaced,
    }
