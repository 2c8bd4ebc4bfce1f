"""Checks for chapter 4c's scans: a block-level scan in shared memory and the add of block offsets.

Each runs the student's kernel in the simulator on counted arrays
(:class:`~demos.patterns.simulator.AccessLog`), so that what the simulator's
one-thread-at-a-time run hides is caught as well: a step of the up-sweep or
down-sweep without its barrier (one thread reads what another writes between
the same two barriers), a barrier inside an ``if``, shared memory read before it
was set. Wrong sums are named by element, block and thread, with the usual
slips told apart: an exclusive scan where an inclusive one was asked, a total
that misses the last element, the offset of block b taken from
``scanned_totals[b]`` instead of ``scanned_totals[b - 1]``. A right scan must also
be parallel; the doubling (Hillis-Steele) scan is accepted with a remark on its
extra work, one thread adding everything in turn is not.

The chapter calls its scan's block size ``SCAN_BLOCK`` (its stencil has a
``STENCIL_BLOCK`` of its own); a kernel that reads a plain ``BLOCK`` (the
exercises', an older copy of the chapter) is checked the same way, and every
message names the constant as the student's kernel does
(:func:`~demos.checks.block_names.in_its_words`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from demos.checks._harness import (
    SENTINEL,
    CheckFailed,
    GuardedOutput,
    compare,
    launch,
    on_gpu,
    require_shared_memory,
)
from demos.checks.block_names import in_its_words
from demos.checks.counted_runs import counted_run, fixed_constants, raise_sync_problems
from demos.patterns import scan
from demos.patterns.simulator import AccessLog, python_function

CHECK_BLOCK = 32  # the simulated launches use blocks of 32 (a student's larger BLOCK is recompiled)
WORK_BLOCK = 128  # one block of this size counts the shared-memory writes per element
DOUBLING_WRITES = 6  # per element at WORK_BLOCK: the work-efficient scan makes about 4
_SCAN_ADVICE = {
    "read": "Each step reads what another thread wrote in the step before: put "
    "cuda.syncthreads() after every step of the up-sweep and of the down-sweep (and after the "
    "last element is cleared), outside the `if`, so that every thread reaches it.",
    "write": "Two threads stored to one element with no barrier between: is a "
    "cuda.syncthreads() missing (also after the last element is cleared, by the thread that "
    "saved the total)? Within a step only the threads with (t + 1) % (2 * d) == 0 update s[t] "
    "(and, going down, s[t - d]).",
    "uninitialised": "Every thread stores its value in s[t] (0 past the end of values) before "
    "the first barrier.",
    "barriers": "Keep the barriers outside every `if`: the threads that do no addition in a "
    "step still wait with the others.",
}


def _block_values(n: int, seed: int, big: bool = False) -> np.ndarray:
    """Small int32 values; with *big*, one in eight is plus or minus an odd number above 2**24,
    past what int16 holds and float32 holds exactly, yet far inside int32 for one block."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-9, 10, n)
    if big:
        values[::8] = rng.choice([-1, 1], values[::8].size) * (rng.integers(2**24, 2**25) | 1)
    return values.astype(np.int32)


def _segments(values: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """(per-block inclusive scans, per-block totals) of *values* in blocks of *block*."""
    inclusive = np.empty(len(values), np.int64)
    totals = []
    for start in range(0, len(values), block):
        part = np.cumsum(values[start : start + block], dtype=np.int64)
        inclusive[start : start + block] = part
        totals.append(part[-1])
    return inclusive, np.array(totals, np.int64)


def _where(k: int, block: int) -> str:
    return f"out[{k}] (block {k // block}, thread {k % block})"


def _compare_block_scan(
    out: np.ndarray,
    totals: np.ndarray,
    values: np.ndarray,
    block: int,
    what: str,
    swept: bool = True,
) -> None:
    """Fail naming the first wrong output or total; *swept*: shared memory was written more than
    once per thread (the sweeps ran)."""
    inclusive, expected_totals = _segments(values, block)
    exclusive = inclusive - values
    wrong = np.flatnonzero(out != inclusive)
    written = out != SENTINEL
    if wrong.size and written.all() and np.array_equal(out, exclusive):
        raise CheckFailed(
            f"{what}: you wrote the exclusive scan (out[i] = the sum of the values before i, "
            f"{_where(0, block)} = 0); this cell asks for the inclusive one, numpy.cumsum's: "
            "add the thread's own value, out[i] = s[t] + values[i]."
        )
    if wrong.size and written.all() and np.array_equal(out[1:], inclusive[:-1]):
        raise CheckFailed(
            f"{what}: every out[i] holds the sum up to i - 1: the scan is one place off. "
            f"{_where(int(wrong[0]), block)} should be {inclusive[wrong[0]]}."
        )
    if wrong.size:
        k = int(wrong[0])
        said = f"{what}: {_where(k, block)} is {int(out[k])}, expected {int(inclusive[k])}"
        if not written[k]:
            raise CheckFailed(
                f"{said}: no thread wrote it. Thread t of block b owns element "
                "i = b * BLOCK + t (cuda.blockIdx.x counts); each thread with i < n writes out[i]."
            )
        if written.all() and np.array_equal(out, values) and not swept:
            raise CheckFailed(f"{said}: out holds the values themselves; nothing was scanned yet.")
        if written.all() and np.array_equal(out, values):
            raise CheckFailed(
                f"{said}: out holds the values themselves, as if every s[t] were 0 after the "
                "down-sweep. Going down, keep the left child's old value before overwriting it: "
                "left = s[t - d]; s[t - d] = s[t]; s[t] += left."
            )
        largest, off = int(np.abs(inclusive).max()), out.astype(np.int64) - inclusive
        if written.all() and (np.all(off % 256 == 0) or np.all(np.abs(off) < 1e-5 * largest)):
            raise CheckFailed(
                f"{said}: the sums reach {largest:,}. Does the shared array hold them? int32 "
                "does; int16 stops at 32,767 and float32 is exact only up to 2**24 = 16,777,216."
            )
        raise CheckFailed(f"{said} ({wrong.size} of {len(out)} elements wrong).")
    bad = np.flatnonzero(totals != expected_totals)
    if bad.size:
        b = int(bad[0])
        got, want = int(totals[b]), int(expected_totals[b])
        last = min(len(values), (b + 1) * block) - 1
        if got == SENTINEL and len(values) < (b + 1) * block:
            hint = (
                "no thread wrote it. This last block is part-filled: its last thread lies past "
                "the end of values, so write the total outside the `if i < n`."
            )
        elif got == SENTINEL:
            hint = "no thread wrote it: the last thread (or the one that holds the sum) writes it."
        elif got == want - int(values[last]):
            hint = "that misses the block's last value: take the total after the up-sweep."
        else:
            hint = "it is the sum of the block's values, s[BLOCK - 1] after the up-sweep."
        raise CheckFailed(f"{what}: totals[{b}] is {got}, expected {want}; {hint}")


def _serial(writes: Counter, block: int) -> tuple[int, int] | None:
    """(thread, its writes) when one thread made most of a block's shared writes, else None."""
    if not writes:
        return None
    (_, tid), most = writes.most_common(1)[0]
    steps = 2 * int(math.log2(block)) + 4
    return (tid, most) if most > 2 * steps else None


@in_its_words(scan.BLOCK_NAMES)
def block_scan(kernel: Any) -> str:
    """Each block's inclusive scan and total; no race; parallel; work-efficient or told so."""
    require_shared_memory(
        kernel,
        "load the block's values into cuda.shared.array(BLOCK, int32), then scan there with a "
        "cuda.syncthreads() after every step.",
    )
    own = scan.block_of(kernel)
    written = python_function(kernel).__globals__.get(scan.block_name(kernel) or "")
    if own is None and isinstance(written, int) and not isinstance(written, bool):
        raise CheckFailed(
            f"BLOCK = {written} is no power of two from 32 to 1,024. The up-sweep pairs elements "
            "1, 2, 4, ... apart, so a block must hold a power of two; a length that is none is "
            "handled by the loads, with 0 past the end."
        )
    if own is None:
        raise CheckFailed(
            "the kernel reads no BLOCK: define BLOCK (threads per block and the shared "
            "array's length) above it as a power of two from 32 to 1,024, such as BLOCK = 64."
        )
    small = kernel if own <= 2 * CHECK_BLOCK else _with_block(kernel, own, CHECK_BLOCK)[0]
    block = min(own, 2 * CHECK_BLOCK) if own <= 2 * CHECK_BLOCK else CHECK_BLOCK
    for seed, n in enumerate((2 * block + 13, block, 5)):
        values = _block_values(n, seed, big=n == block)
        blocks = math.ceil(n / block)
        what = f"BLOCK = {block}, n = {n} ({blocks} block{'s' if blocks > 1 else ''})"
        out = np.full(n, SENTINEL, np.int32)
        totals = np.full(blocks, SENTINEL, np.int32)
        log, writes = counted_run(
            small, blocks, block, {"values": values, "out": out, "totals": totals}, what
        )
        raise_sync_problems(log, what, _SCAN_ADVICE)
        swept = sum(writes.values()) > blocks * block
        _compare_block_scan(out, totals, values, block, what, swept)
        serial = _serial(writes, block)
        if serial:
            raise CheckFailed(
                f"{what}: right sums, but thread {serial[0]} made {serial[1]} of the block's "
                "shared-memory writes: one thread adds everything in turn, BLOCK steps one "
                "after another. Let each step use many threads at once: the up-sweep and "
                "down-sweep take 2 log2(BLOCK) steps."
            )
        most = max(_writes_per_total(log), default=0)
        if most > 1:
            raise CheckFailed(
                f"{what}: a block's total was written {most} times, once by each of {most} "
                "threads; let one thread write it (`if t == BLOCK - 1:`)."
            )
        shuffles = any("shfl" in name for name in log.warp_collectives)
    per_element = _work(kernel, own, block)
    if on_gpu():
        _scan_on_the_gpu(kernel, own)
    summary = (
        f"right inclusive scans and totals with blocks of {block}, a part-filled last block "
        f"included, no race; {per_element:.1f} shared-memory writes per element at BLOCK = "
        f"{WORK_BLOCK}"
    )
    if shuffles:
        return summary + (
            ": a warp-shuffle scan, the warps scanning in registers and meeting in shared "
            "memory, as library scans do. Try the up-sweep and down-sweep too: they are what "
            "the chapter's counts are about."
        )
    if per_element > DOUBLING_WRITES:
        return summary + (
            ". This is the doubling (Hillis-Steele) scan: right, and fine for a warp or two, "
            "but it makes log2(BLOCK) additions per element where the up-sweep and down-sweep "
            "make about 2, work that a long array pays for. Try the work-efficient form too."
        )
    return summary + ": the work-efficient scan (about 2 additions per element)."


def _with_block(kernel: Any, own: int, block: int) -> tuple[Any, tuple[str, ...]]:
    """*kernel* compiled with BLOCK = *block*, and the module constants it reads that are
    multiples of its BLOCK, or BLOCK plus a little (``BUF = 2 * BLOCK``, ``SIZE = BLOCK + 1``:
    a GPU wants a shared array's size as one constant) following it; the names changed."""
    fn = python_function(kernel)
    own_name = scan.block_name(kernel) or "BLOCK"
    names = {own_name: block}
    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        if name == own_name or type(value) is not int or value < own:
            continue
        if value % own == 0:
            names[name] = value // own * block
        elif value - own <= 32:
            names[name] = block + value - own
    return scan.with_constants(kernel, **names), tuple(names)


def _writes_per_total(log: AccessLog) -> list[int]:
    return [count for key, count in log.writes.items() if key[0] == "totals"]


def _work(kernel: Any, own: int, passed: int) -> float:
    """Shared-memory writes per element of one block of WORK_BLOCK."""
    work, changed = _with_block(kernel, own, WORK_BLOCK)
    values = _block_values(WORK_BLOCK, 7)
    out = np.full(WORK_BLOCK, SENTINEL, np.int32)
    totals = np.full(1, SENTINEL, np.int32)
    what = f"compiled with BLOCK = {WORK_BLOCK}, n = {WORK_BLOCK}"
    try:
        log, writes = counted_run(
            work, 1, WORK_BLOCK, {"values": values, "out": out, "totals": totals}, what
        )
        raise_sync_problems(log, what, _SCAN_ADVICE)
        _compare_block_scan(out, totals, values, WORK_BLOCK, what)
    except CheckFailed as problem:
        raise CheckFailed(
            f"{problem} Your kernel passed with BLOCK = {passed}: does all of "
            f"it follow BLOCK, with no fixed number of steps?{fixed_constants(kernel, *changed)}"
        ) from None
    return sum(writes.values()) / WORK_BLOCK


def _scan_on_the_gpu(kernel: Any, block: int) -> None:
    """The compiled kernel on the GPU with its own BLOCK, on a length no block divides."""
    n = 3 * block + 17
    values = _block_values(n, 11)
    blocks = math.ceil(n / block)
    out = GuardedOutput((n,), np.int32)
    totals = GuardedOutput((blocks,), np.int32)
    what = f"on the GPU, BLOCK = {block}, n = {n}"
    launch(kernel, blocks, block, values, out.view, totals.view, what=what)
    _compare_block_scan(out.fetch(what), totals.fetch(what), values, block, what)


# --- the multi-block scan: adding each block's offset ------------------------------------------
_ADD_OUTSIDE = (
    "Take the block from cuda.blockIdx.x (the check launches blocks of 32 and of 64 threads, "
    "so no fixed block size works), and let only the threads with i < out.shape[0] touch out."
)
_ADD_ADVICE = {
    "read": "A thread read what another one stored with no barrier between: wait with "
    "cuda.syncthreads() before reading it (or read scanned_totals[b - 1] directly).",
    "uninitialised": "Shared memory is read before a thread stored to it: store, then "
    "cuda.syncthreads(), then read.",
}


def _add_once(kernel: Any, block: int, n: int, seed: int) -> None:
    """The add in blocks of *block* after NumPy's per-block scans of n values; fails naming the
    first wrong element and the usual slip."""
    values = _block_values(n, seed)
    blocks = math.ceil(n / block)
    inclusive, totals = _segments(values, block)
    scanned = np.cumsum(totals).astype(np.int32)
    out = inclusive.astype(np.int32)
    what = f"n = {n} in {blocks} block{'s' if blocks > 1 else ''} of {block}"
    log, _ = counted_run(
        kernel, blocks, block, {"out": out, "scanned_totals": scanned}, what, _ADD_OUTSIDE
    )
    raise_sync_problems(log, what, _ADD_ADVICE)
    before = sorted(k[1][0] for k in log.reads if k[0] == "scanned_totals" and k[1][0] < 0)
    if before:
        raise CheckFailed(
            f"{what}: a thread read scanned_totals[{before[0]}], before the start of the array "
            "(NumPy counts a negative index from the end; a GPU reads whatever lies there). "
            "Block 0 has no blocks before it: only blocks b > 0 add scanned_totals[b - 1]."
        )
    expected = np.cumsum(values, dtype=np.int64)
    wrong = np.flatnonzero(out != expected)
    if not wrong.size:
        return
    k = int(wrong[0])
    b = k // block
    said = f"{what}: {_where(k, block)} is {out[k]}, expected {expected[k]}"
    diff = int(out[k]) - int(expected[k])
    if b == 0 and diff == int(scanned[0]):
        raise CheckFailed(
            f"{said}: block 0 got scanned_totals[0] added. Block b needs the sum of the blocks "
            "*before* it, scanned_totals[b - 1]; block 0 adds nothing."
        )
    if b > 0 and diff == -int(scanned[b - 1]):
        raise CheckFailed(
            f"{said}: nothing was added to block {b}. Every thread of a block b > 0 adds "
            "scanned_totals[b - 1] to its own element."
        )
    if b > 0 and diff == int(scanned[b]) - int(scanned[b - 1]):
        raise CheckFailed(
            f"{said}: block {b} got scanned_totals[{b}], which includes its own total. Add "
            "scanned_totals[b - 1]."
        )
    if b > 0 and int(out[k]) == int(scanned[b - 1]):
        raise CheckFailed(
            f"{said}: out[{k}] was replaced by the offset scanned_totals[{b - 1}]; add it to the "
            "block's scan already in out[i] (+=)."
        )
    raise CheckFailed(
        f"{said}, numpy.cumsum's ({wrong.size} of {n} elements wrong). Thread t of block b > 0 "
        "adds scanned_totals[b - 1] to out[i], i = cuda.grid(1), once."
    )


@in_its_words(scan.BLOCK_NAMES)
def add_offsets(kernel: Any) -> str:
    """After per-block scans (as ``block_scan`` makes them, computed here with NumPy so that only
    the student's add is judged), the add gives numpy.cumsum on several lengths."""
    name = scan.block_name(kernel)
    reads = name in python_function(kernel).__code__.co_names
    own = scan.block_of(kernel) if reads else None
    compiled, gpu_block = kernel, own or scan.BLOCK
    block = own or CHECK_BLOCK
    if block > 2 * CHECK_BLOCK:  # a BLOCK the kernel indexes with: compile it smaller
        kernel, block = scan.with_constants(kernel, **{name: CHECK_BLOCK}), CHECK_BLOCK
    sizes = [(block, n) for n in (5 * block + 3, 3 * block, block - 11)]
    if not reads:  # it must follow the launch's block size: try another
        sizes.append((2 * CHECK_BLOCK, 4 * CHECK_BLOCK + 7))
    for seed, (size, n) in enumerate(sizes):
        _add_once(kernel, size, n, 20 + seed)
    if on_gpu():
        n = 100_003
        values = _block_values(n, 30)
        got = scan.inclusive_scan(values, gpu_block, add_kernel=compiled)
        compare(got, np.cumsum(values).astype(np.int32), f"on the GPU, n = {n:,}")
    return (
        f"the three launches (scan each block, scan the totals, add) give numpy.cumsum for "
        f"n = {', '.join(str(n) for _, n in sizes)} in blocks of "
        f"{' and '.join(sorted({str(size) for size, _ in sizes}))}."
    )
