"""Checks for chapter 4b's "your turn" cells: an atomic histogram, a shared-memory histogram, a
warp-shuffle block sum and a tiled matrix multiply.

Each runs the student's kernel in the simulator on counted arrays (see
:mod:`demos.patterns.reports`): a right answer is not enough, the kernel must also
use the pattern the cell teaches (no plain stores to the bins, each value read once,
one global atomic per bin and block) and be right on a GPU, where the simulator's
one-thread-at-a-time run hides races: two threads of a block updating one shared
bin between the same two barriers, or a barrier that not every thread reaches,
fail here with what happened where.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from demos.checks._harness import (
    SENTINEL,
    CheckFailed,
    GuardedInput,
    GuardedOutput,
    compare,
    launch,
    on_gpu,
    require_shared_memory,
    warp_error_text,
)
from demos.patterns import matmul, reports
from demos.patterns.simulator import AccessLog
from demos.patterns.simwarp import WarpError, bank_conflict_degree, sectors, warp_requests
from demos.patterns.sizes import N_BINS, THREADS

BLOCKS, HISTOGRAM_THREADS = 2, 32  # the histogram checks' launch: fewer threads than values


def _values(n: int = 400) -> np.ndarray:
    return np.random.default_rng(3).integers(0, N_BINS, n).astype(np.int32)


def _no_sync_problems(log: Any, advice: dict[str, str]) -> None:
    for kind, sentence in log.problems():
        raise CheckFailed(f"{sentence} {advice.get(kind, '')}".strip())


def _run(run: Any, kernel: Any, *args: Any) -> tuple[dict, Any]:
    try:
        return run(kernel, *args)
    except WarpError as exc:
        raise CheckFailed(warp_error_text(exc)) from None


def _wrong_counts(report: dict[str, Any], values: np.ndarray) -> str | None:
    expected = np.bincount(values, minlength=N_BINS)
    wrong = np.flatnonzero(report["counts"] != expected)
    if not wrong.size:
        return None
    b = int(wrong[0])
    return (
        f"bin {b} holds {report['counts'][b]}, expected {expected[b]} "
        f"({wrong.size} of {N_BINS} bins wrong)."
    )


def _histogram(kernel: Any, advice: dict[str, str]) -> tuple[dict, Any, str]:
    """Run the histogram check's launch; if the kernel counts one value per thread, once more with
    a thread for every value. Returns the report, its log and a note on the launch."""
    values = _values()
    report, log = _run(reports.run_histogram, kernel, values, N_BINS, BLOCKS, HISTOGRAM_THREADS)
    _no_sync_problems(log, advice)
    wrong = _wrong_counts(report, values)
    if wrong is None:
        return report, log, ""
    launched, counted = report["threads_launched"], int(report["counts"].sum())
    launch = (
        f"The check launches {BLOCKS} blocks of {HISTOGRAM_THREADS} threads ({launched} threads) "
        f"for {len(values)} values"
    )
    if counted == launched:  # one value per thread: try with a thread for every value
        blocks = math.ceil(len(values) / HISTOGRAM_THREADS)
        again, again_log = _run(
            reports.run_histogram, kernel, values, N_BINS, blocks, HISTOGRAM_THREADS
        )
        _no_sync_problems(again_log, advice)
        if _wrong_counts(again, values) is None:
            note = (
                f" You count one value per thread: with {launched} threads only {counted} of "
                f"{len(values)} values were counted, so the check launched {blocks} blocks of "
                f"{HISTOGRAM_THREADS} ({blocks * HISTOGRAM_THREADS} threads) instead. A "
                "grid-stride loop (`for i in range(cuda.grid(1), values.shape[0], "
                "cuda.gridsize(1))`) covers any input with any launch."
            )
            return again, again_log, note
    if "inc" in log.atomic_functions:
        launch += (
            "; cuda.atomic.inc(bins, v, limit) wraps a bin to 0 once it holds `limit`: give a "
            "limit above any count (such as values.shape[0]), or use cuda.atomic.add(bins, v, 1)"
        )
    elif counted < len(values):
        launch += f", and your kernel counted {counted} of them: does every value get a thread?"
    raise CheckFailed(f"{wrong} {launch}.")


def histogram_atomic(kernel: Any) -> str:
    """The kernel counts right and never writes the global bins with a plain store."""
    report, log, note = _histogram(kernel, {})
    if report["plain_writes_to_bins"]:
        raise CheckFailed(
            f"{report['plain_writes_to_bins']} plain writes to bins: `bins[v] += 1` is a read, an "
            "add and a write, and two threads doing it at once lose a count on a GPU (the "
            "simulator runs one thread at a time, so its counts look right). Use "
            "cuda.atomic.add(bins, value, 1)."
        )
    summary = f"right counts with {report['atomics_on_bins']} global atomics (one per value)."
    if "inc" in log.atomic_functions:
        summary += (
            " cuda.atomic.inc counts too; note that Numba compiles it only for unsigned arrays "
            "(uint32, uint64), so with these int32 bins a GPU needs cuda.atomic.add."
        )
    return summary + note


def histogram_shared(kernel: Any) -> str:
    """Privatised: each value read once, at most one global atomic per bin and block, no race."""
    advice = {
        "write": "Count into the block's bins with cuda.atomic.add(local, v, 1): all threads of "
        "the block share them.",
        "read": "Wait with cuda.syncthreads() between counting into the shared bins and reading "
        "them.",
        "uninitialised": "Zero the block's bins first (each thread a few), then "
        "cuda.syncthreads(), then count.",
    }
    values = _values()
    report, _, note = _histogram(kernel, advice)
    if report["shared_arrays"] == 0:
        raise CheckFailed("no cuda.shared.array: the block's histogram belongs in shared memory.")
    if report["most_reads_of_a_value"] != 1:
        raise CheckFailed("a value is read from global memory more than once.")
    worst = report["most_atomics_per_bin_and_block"]
    if worst > 1:
        raise CheckFailed(
            f"a block made {worst} global atomics on one bin; add each bin once, after a barrier."
        )
    return (
        f"right counts with {report['atomics_on_bins']} global atomics for {len(values)} values."
        + note
    )


def warp_sum(kernel: Any) -> str:
    """One partial sum per block of ``THREADS``, each value read once, no race."""
    x = np.random.default_rng(4).random(300).astype(np.float32)
    report, log = _run(reports.run_block_sum, kernel, x, 2, THREADS)
    _no_sync_problems(
        log,
        {
            "read": "Lane 0 of each warp writes its sum to shared memory; wait with "
            "cuda.syncthreads() before the first warp reads them.",
        },
    )
    expected = reports.expected_block_sums(x, 2, THREADS)
    if not np.allclose(report["partial"], expected, rtol=1e-5):
        raise CheckFailed(f"block sums {report['partial']} instead of {expected}.")
    if report["most_reads_of_a_value"] != 1:
        raise CheckFailed("a value is read from global memory more than once.")
    if report["writes_to_partial"] != 2:
        raise CheckFailed(
            f"{report['writes_to_partial']} writes to partial for 2 blocks: "
            "each block should write its sum once."
        )
    shuffles = ", ".join(sorted(k for k in log.warp_collectives if k.startswith("shfl")))
    return f"right block sums with {report['barriers_per_thread']:.0f} barrier(s) per thread" + (
        f" and {shuffles}." if shuffles else "."
    )


# --- the tiled matrix multiply --------------------------------------------------------------
MATMUL_SHAPES = ((19, 21, 23), (5, 40, 3))  # (n, k, m): part-filled tiles on every edge
_BARRIER_IN_IF = (
    "A cuda.syncthreads() inside an `if` (such as `if i < n and j < m:`) is reached only by the "
    "threads inside c. Keep both barriers outside every if: threads past the edge load 0 into "
    "the tiles, multiply along, and only skip the final write."
)


def _matmul_failure(report: dict[str, Any], log: Any, what: str) -> str | None:
    """The synchronisation fault of a counted run in the student's words, or None."""
    problems = {kind: said[0].upper() + said[1:] for kind, said in log.problems()}
    if "barriers" in problems:
        return f"{what}: {problems['barriers']} {_BARRIER_IN_IF}"
    steps, most = report["tile_steps"], report["most_barriers_per_thread"]
    if report["uninitialised_shared_reads"] and most < 2 * steps:
        return (
            f"{what}: {problems.get('uninitialised') or problems.get('read')} A thread used the "
            "tiles before the others had loaded them: put cuda.syncthreads() between loading "
            "the tiles and the loop over k."
        )
    if "read" in problems and most < 2 * steps:
        return (
            f"{what}: {most} cuda.syncthreads() per thread for {steps} tile steps, so a tile is "
            f"loaded without the second barrier. {problems['read']} A fast thread loads the next "
            "tiles over values slower threads are still multiplying: add cuda.syncthreads() after "
            "the loop over k, before the next step's loads."
        )
    if "write" in problems:
        return (
            f"{what}: {problems['write']} Each thread stores one element of each tile, its own "
            "[ty, tx]."
        )
    if "read" in problems:
        return (
            f"{what}: {problems['read']} Wait with cuda.syncthreads() after loading the tiles "
            "and again after using them."
        )
    if "uninitialised" in problems:
        return (
            f"{what}: {problems['uninitialised']} Past the edge of a or b there is no element to "
            "load: store 0 in the tile there, so the loop over the whole tile adds nothing."
        )
    return None


@contextlib.contextmanager
def tracing_addresses() -> Iterator[None]:
    """Within this block every new AccessLog keeps the addresses each warp touches."""
    before = AccessLog.trace_addresses
    AccessLog.trace_addresses = True
    try:
        yield
    finally:
        AccessLog.trace_addresses = before


def _counted_matmul(
    kernel: Any, a: np.ndarray, b: np.ndarray, tile: int, what: str, trace: bool = False
) -> tuple[dict, Any]:
    try:
        with tracing_addresses() if trace else contextlib.nullcontext():
            report, log = reports.run_matmul(kernel, a, b, tile, fill=SENTINEL)
    except WarpError as exc:
        raise CheckFailed(f"{what}: {warp_error_text(exc)}") from None
    except IndexError as exc:
        raise CheckFailed(
            f"{what}: a thread indexed outside a matrix ({warp_error_text(exc)}). Threads whose "
            "element of a or b lies past the edge store 0 in the tile instead of reading it."
        ) from None
    failure = _matmul_failure(report, log, what)
    if failure:
        raise CheckFailed(failure)
    return report, log


def _access_notes(log: Any, itemsize: int) -> list[str]:
    """What a right kernel still does slowly, in the chapter's words: tile loads from global
    memory that a warp does not coalesce, and shared-memory accesses with bank conflicts."""
    worst_bank: dict[tuple, int] = {}
    global_use: dict[tuple, list[int]] = {}
    for kind, name, line, lanes in warp_requests(log.requests or {}):
        if len(lanes) < 2:
            continue
        if kind.startswith("shared"):
            where = (kind.split()[1], name.partition(" (")[0], line)
            worst_bank[where] = max(worst_bank.get(where, 1), bank_conflict_degree(lanes))
        elif kind == "global read" and name in ("a", "b"):
            used, fewest = sectors(lanes, itemsize)
            totals = global_use.setdefault((name, line), [0, 0])
            totals[0] += used
            totals[1] += fewest
    notes = []
    for (name, line), (used, fewest) in sorted(global_use.items()):
        if used > 2 * fewest:
            notes.append(
                f"the loads of {name} (line {line}) are not coalesced: a warp's load touches "
                f"{used / fewest:.1f} times the 32-byte sectors it needs. Let neighbouring "
                f"threads (tx) read neighbouring elements of a row: the last index of {name}[..] "
                "should be the one that grows with tx (chapter 4's coalescing)"
            )
    by_array: dict[tuple, list] = {}
    for (verb, name, line), degree in worst_bank.items():
        if degree > 1:
            entry = by_array.setdefault((verb, name), [1, []])
            entry[0] = max(entry[0], degree)
            entry[1].append(line)
    for (verb, name), (degree, lines) in sorted(by_array.items(), key=lambda kv: -kv[1][0]):
        said = ", ".join(map(str, sorted(lines)))
        notes.append(
            f"{name} is {'read' if verb == 'read' else 'written'} with up to {degree}-way bank "
            f"conflicts (line{'s' if len(lines) > 1 else ''} {said}): the lanes of a warp ask "
            f"{degree} different words of one bank, served one after another. Index the tile so "
            "that neighbouring lanes (tx) use neighbouring words, tile[..., tx] (or pad it to "
            "TILE + 1 columns)"
        )
    return notes


def tiled_matmul(kernel: Any) -> str:
    """``c = a @ b`` with shared tiles: right everywhere, no race, each element loaded once per
    block that needs it."""
    require_shared_memory(
        kernel,
        "load a tile of a and one of b into cuda.shared.array, wait with cuda.syncthreads(), "
        "multiply from the tiles, and wait again before the next tiles.",
    )
    tile = matmul.tile_of(kernel)
    rng = np.random.default_rng(9)
    summary, notes = "", []
    for n, inner, m in MATMUL_SHAPES:
        a = rng.random((n, inner)).astype(np.float32)
        b = rng.random((inner, m)).astype(np.float32)
        what = f"{n} x {inner} times {inner} x {m}, blocks of TILE x TILE = {tile} x {tile}"
        report, log = _counted_matmul(kernel, a, b, tile, what, trace=not summary)
        compare(report["product"], a.astype(np.float64) @ b, what, rtol=1e-5, atol=1e-5)
        allowed = -(-m // tile)  # once per block column of c
        if report["most_reads_of_an_a"] > allowed or report["most_reads_of_a_b"] > -(-n // tile):
            raise CheckFailed(
                f"{what}: an element of a was read {report['most_reads_of_an_a']} times and one "
                f"of b {report['most_reads_of_a_b']} times from global memory; with tiles each "
                f"is read once per block that needs it (a: {allowed}, b: {-(-n // tile)}). Read "
                "the operands of the loop over k from the shared tiles."
            )
        if not summary:
            notes = _access_notes(log, a.itemsize)
            naive = matmul.global_loads_per_output(inner, "naive")
            summary = (
                f"right products with {tile} x {tile} tiles, edges included, no races; "
                f"{report['loads_per_output']:.1f} global loads per element of c for k = "
                f"{inner}, where the naive kernel makes {naive}."
            )
    if on_gpu():
        _on_the_gpu(kernel, tile)
    if notes:
        summary += " Right, but slower than it needs to be: " + "; ".join(notes) + "."
    return summary


def _on_the_gpu(kernel: Any, tile: int) -> None:
    """The compiled kernel on the GPU, on a size the simulator could not run."""
    n, inner, m = 300, 500, 200
    rng = np.random.default_rng(10)
    a = rng.random((n, inner)).astype(np.float32)
    b = rng.random((inner, m)).astype(np.float32)
    out = GuardedOutput((n, m), np.float32)
    grid, block = matmul.launch_config(n, m, tile)
    what = f"on the GPU, {n} x {inner} times {inner} x {m}"
    a_in, b_in = GuardedInput(a), GuardedInput(b)  # NaN past the edges: unguarded tile loads
    launch(kernel, grid, block, a_in.view, b_in.view, out.view, what=what)
    compare(out.fetch(what), a.astype(np.float64) @ b, what, rtol=1e-4, atol=1e-4)
