"""Checks for chapter 4b's "your turn" cells: an atomic histogram, a shared-memory histogram and a
warp-shuffle block sum.

Each runs the student's kernel in the simulator on counted arrays (see
:mod:`demos.patterns.checks`): a right answer is not enough, the kernel must also
use the pattern the cell teaches (no plain stores to the bins, each value read once,
one global atomic per bin and block) and be right on a GPU, where the simulator's
one-thread-at-a-time run hides races: two threads of a block updating one shared
bin between the same two barriers, or a barrier that not every thread reaches,
fail here with what happened where.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from demos.checks._harness import CheckFailed, warp_error_text
from demos.patterns import checks
from demos.patterns.lesson import N_BINS, THREADS
from demos.patterns.simwarp import WarpError

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
    report, log = _run(checks.run_histogram, kernel, values, N_BINS, BLOCKS, HISTOGRAM_THREADS)
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
            checks.run_histogram, kernel, values, N_BINS, blocks, HISTOGRAM_THREADS
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
    report, log = _run(checks.run_block_sum, kernel, x, 2, THREADS)
    _no_sync_problems(
        log,
        {
            "read": "Lane 0 of each warp writes its sum to shared memory; wait with "
            "cuda.syncthreads() before the first warp reads them.",
        },
    )
    expected = checks.expected_block_sums(x, 2, THREADS)
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
