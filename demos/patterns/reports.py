"""What a histogram, sum or matrix-multiply kernel did, counted: for the checks and the assignment.

Each report runs the kernel in the simulator (also on a GPU machine, see
:func:`~demos.patterns.simulator.simulated`) on wrapped arrays and returns plain
numbers: the result, how often each input element was read, how many plain
writes and atomics reached the global output (per bin and block), how many
barriers each thread reached and shared arrays the kernel used, and the races
the simulator hides (two threads updating one shared element between the same
two barriers). The callers decide what is good enough; the numbers are the same
on every machine, so a grade built on them is too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from demos.patterns.simulator import AccessLog, simulated


def _counted_launch(
    kernel: Any, values: np.ndarray, out: np.ndarray, out_name: str, blocks: int, threads: int
) -> tuple[AccessLog, np.ndarray, dict[str, int]]:
    """Run ``kernel[blocks, threads](values, out)`` in the simulator with every access counted.

    Returns the log, the (wrapped) output and what every report holds: how often
    the least- and the most-read input value was read (each should be read
    exactly once), the threads launched, the barriers per thread, the races on
    shared memory and the warp collectives.
    """
    log = AccessLog()
    wrapped_values = log.wrap(np.ascontiguousarray(values), "values")
    wrapped_out = log.wrap(out, out_name)
    with log.counting():
        simulated(kernel)[blocks, threads](wrapped_values, wrapped_out)
    counts = [log.reads.get(("values", (i,)), 0) for i in range(len(values))]
    common = {
        "fewest_reads_of_a_value": min(counts, default=0),
        "most_reads_of_a_value": max(counts, default=0),
        **synchronisation(log, blocks, threads),
    }
    return log, wrapped_out, common


def synchronisation(log: AccessLog, blocks: int, threads: int) -> dict[str, int]:
    """What every report holds about how the threads worked together (plain ints).

    ``threads_launched``; ``fewest_barriers_per_thread``/``most_barriers_per_thread``
    (``cuda.syncthreads()`` reached by any one thread) and ``blocks_with_uneven_barriers``
    (blocks whose threads reached different numbers: a barrier inside ``if t < step:``
    or after an early ``return``; 0 for a right kernel); ``racy_shared_writes``
    (shared elements that two threads of a block wrote, or updated with ``+=``,
    between the same two barriers), ``racy_shared_reads`` (read by one thread while
    another wrote them, unordered), ``uninitialised_shared_reads`` (read before any
    thread of the block set them); ``warp_shuffles`` (``cuda.shfl_*_sync`` calls).
    The simulator gives right numbers for kernels with these faults; a GPU does not.
    """
    fewest, most = log.barrier_range()
    return {
        "threads_launched": int(blocks) * int(threads),
        "fewest_barriers_per_thread": fewest,
        "most_barriers_per_thread": most,
        "blocks_with_uneven_barriers": len(log.uneven_barriers()),
        "racy_shared_writes": log.racy_shared_writes(),
        "racy_shared_reads": log.racy_shared_reads(),
        "uninitialised_shared_reads": log.uninitialised_shared_reads(),
        "warp_shuffles": sum(c for k, c in log.warp_collectives.items() if k.startswith("shfl")),
    }


def run_histogram(
    kernel: Any, values: np.ndarray, n_bins: int, blocks: int, threads: int
) -> tuple[dict, AccessLog]:
    """:func:`histogram_report` and the log behind it (for checks that explain what they saw)."""
    log, bins, common = _counted_launch(
        kernel, values, np.zeros(n_bins, np.int32), "bins", blocks, threads
    )
    report = {
        "counts": np.asarray(bins).copy(),
        **common,
        "plain_writes_to_bins": log.total(log.writes, "bins"),
        "atomics_on_bins": log.total(log.atomics, "bins"),
        "most_atomics_per_bin_and_block": log.max_atomics_per_bin_and_block("bins"),
        "shared_arrays": log.shared_arrays,
    }
    return report, log


def histogram_report(
    kernel: Any, values: np.ndarray, n_bins: int, blocks: int, threads: int
) -> dict:
    """Run a histogram kernel ``kernel[blocks, threads](values, bins)`` counted; what it did.

    ``counts`` (the bins), ``fewest_reads_of_a_value``/``most_reads_of_a_value``,
    ``plain_writes_to_bins``, ``atomics_on_bins`` (any ``cuda.atomic`` function),
    ``most_atomics_per_bin_and_block``, ``shared_arrays`` (calls), and for every
    kernel the fields of :func:`synchronisation` (``racy_shared_writes`` counts
    the shared bins of ``local[v] += 1``).
    """
    return run_histogram(kernel, values, n_bins, blocks, threads)[0]


def run_block_sum(
    kernel: Any, values: np.ndarray, blocks: int, threads: int
) -> tuple[dict, AccessLog]:
    """:func:`block_sum_report` and the log behind it."""
    log, partial, common = _counted_launch(
        kernel, values, np.zeros(blocks, values.dtype), "partial", blocks, threads
    )
    report = {
        "partial": np.asarray(partial).copy(),
        **common,
        "writes_to_partial": log.total(log.writes, "partial"),
        "atomics": log.total(log.atomics, "partial") + log.total(log.atomics, "values"),
        "barriers_per_thread": log.barriers / (blocks * threads),
        "shared_arrays": log.shared_arrays,
    }
    return report, log


def block_sum_report(kernel: Any, values: np.ndarray, blocks: int, threads: int) -> dict:
    """Run ``kernel[blocks, threads](values, partial)`` counted (one partial sum per block
    expected).

    ``partial``, the read counts, ``writes_to_partial``, ``atomics``,
    ``barriers_per_thread`` (the mean), ``shared_arrays``, and the fields every
    report has (see :func:`histogram_report`): a tree must have
    ``blocks_with_uneven_barriers == 0`` (no barrier inside ``if t < step:``) and
    ``racy_shared_reads == 0`` (a barrier after every step).
    """
    return run_block_sum(kernel, values, blocks, threads)[0]


def expected_block_sums(values: np.ndarray, blocks: int, threads: int) -> np.ndarray:
    """What a grid-stride block sum must give: block b adds the elements whose thread is in block
    b."""
    owner = (np.arange(len(values)) % (blocks * threads)) // threads
    return np.bincount(owner, weights=values.astype(np.float64), minlength=blocks)


# --- the kernel_patterns assignment: a weighted histogram and a block maximum -------------
def weighted_histogram_report(
    kernel: Any, values: np.ndarray, weights: np.ndarray, n_bins: int, blocks: int, threads: int
) -> dict:
    """Run ``kernel[blocks, threads](values, weights, totals)`` counted; what it did.

    A weighted histogram reads two inputs and adds float32 weights, so it needs
    its own launch: ``totals`` (the float32 bins), ``fewest_reads_of_a_value``/
    ``most_reads_of_a_value``, ``most_reads_of_a_weight`` (a value out of range
    needs no weight, so 0 is fine), ``plain_writes_to_totals``,
    ``atomics_on_totals``, ``most_atomics_per_bin_and_block``,
    ``shared_arrays`` and the fields of :func:`synchronisation` (a right kernel
    has ``racy_shared_writes == 0``: ``block_totals[b] += w`` by many threads is
    a race).
    """
    log = AccessLog()
    inputs = [
        log.wrap(np.ascontiguousarray(a), name)
        for a, name in ((values, "values"), (weights, "weights"))
    ]
    totals = log.wrap(np.zeros(n_bins, np.float32), "totals")
    with log.counting():
        simulated(kernel)[blocks, threads](*inputs, totals)

    def reads(name: str, n: int) -> list[int]:
        return [log.reads.get((name, (i,)), 0) for i in range(n)]

    return {
        "totals": np.asarray(totals).copy(),
        "fewest_reads_of_a_value": min(reads("values", len(values)), default=0),
        "most_reads_of_a_value": max(reads("values", len(values)), default=0),
        "most_reads_of_a_weight": max(reads("weights", len(weights)), default=0),
        "plain_writes_to_totals": log.total(log.writes, "totals"),
        "atomics_on_totals": log.total(log.atomics, "totals"),
        "most_atomics_per_bin_and_block": log.max_atomics_per_bin_and_block("totals"),
        "shared_arrays": log.shared_arrays,
        **synchronisation(log, blocks, threads),
    }


def block_max_report(kernel: Any, values: np.ndarray, blocks: int, threads: int) -> dict:
    """Run ``kernel[blocks, threads](values, maxima)`` counted (one maximum per block expected).

    ``maxima`` (NaN where a block wrote nothing), the read counts,
    ``writes_to_maxima``, ``atomics``, ``barriers_per_thread`` (the mean),
    ``shared_arrays`` and the fields of :func:`synchronisation` (a right tree has
    ``blocks_with_uneven_barriers == 0`` and ``racy_shared_reads == 0``).
    """
    log, maxima, reads = _counted_launch(
        kernel, values, np.full(blocks, np.nan, values.dtype), "maxima", blocks, threads
    )
    return {
        "maxima": np.asarray(maxima).copy(),
        "fewest_reads_of_a_value": reads["fewest_reads_of_a_value"],
        "most_reads_of_a_value": reads["most_reads_of_a_value"],
        "writes_to_maxima": log.total(log.writes, "maxima"),
        "atomics": log.total(log.atomics, "maxima") + log.total(log.atomics, "values"),
        "barriers_per_thread": log.barriers / (blocks * threads),
        "shared_arrays": log.shared_arrays,
        **{k: v for k, v in reads.items() if "_reads_of_a_value" not in k},
    }


def expected_block_maxima(values: np.ndarray, blocks: int, threads: int) -> np.ndarray:
    """What a grid-stride block maximum must give: block b's largest element (-inf if none)."""
    owner = (np.arange(len(values)) % (blocks * threads)) // threads
    maxima = np.full(blocks, -np.inf)
    np.maximum.at(maxima, owner, values.astype(np.float64))
    return maxima


def weighted_measurements(
    rng: np.random.Generator, n: int, n_bins: int, low: float, width: float
) -> tuple[np.ndarray, np.ndarray]:
    """*n* float32 values and weights for a weighted histogram of *n_bins* bins from *low*.

    Values fall in the bins and in two bins' width on either side (out of
    range), never within 5 % of a bin's width from an edge, so float32 and
    float64 arithmetic put each in the same bin; weights lie in [0.5, 1.5).
    """
    bins = rng.integers(-2, n_bins + 2, n)
    values = (low + (bins + rng.uniform(0.05, 0.95, n)) * width).astype(np.float32)
    return values, rng.uniform(0.5, 1.5, n).astype(np.float32)


# --- chapter 4b's tiled matrix multiply ------------------------------------------------------
def run_matmul(
    kernel: Any, a: np.ndarray, b: np.ndarray, tile: int, fill: float = 0.0
) -> tuple[dict, AccessLog]:
    """Run ``kernel[grid, (tile, tile)](a, b, c)`` counted, columns of ``c`` on x; what it did.

    ``product`` (``c``, which starts as *fill*), ``loads_per_output`` (elements of
    ``a`` and ``b`` read from global memory, per element of ``c``),
    ``most_reads_of_an_a``/``most_reads_of_a_b`` (the most any one element was
    read), ``writes_to_c``, ``shared_arrays``, ``tile_steps`` (ceil(k / tile)) and
    the fields of :func:`synchronisation`: a right tiled kernel has two barriers
    per tile step for every thread, no races and no uninitialised reads.
    """
    n, inner = a.shape
    m = b.shape[1]
    grid = (-(-m // tile), -(-n // tile))
    log = AccessLog()
    wrapped_a = log.wrap(np.ascontiguousarray(a), "a")
    wrapped_b = log.wrap(np.ascontiguousarray(b), "b")
    c = log.wrap(np.full((n, m), fill, a.dtype), "c")
    with log.counting():
        simulated(kernel)[grid, (tile, tile)](wrapped_a, wrapped_b, c)

    def most(name: str) -> int:
        return max((count for key, count in log.reads.items() if key[0] == name), default=0)

    loads = log.total(log.reads, "a") + log.total(log.reads, "b")
    report = {
        "product": np.asarray(c).copy(),
        "loads_per_output": loads / (n * m),
        "most_reads_of_an_a": most("a"),
        "most_reads_of_a_b": most("b"),
        "writes_to_c": log.total(log.writes, "c"),
        "shared_arrays": log.shared_arrays,
        "tile_steps": -(-inner // tile),
        **synchronisation(log, grid[0] * grid[1], tile * tile),
    }
    return report, log


def matmul_report(kernel: Any, a: np.ndarray, b: np.ndarray, tile: int) -> dict:
    """:func:`run_matmul`'s report alone (plain numbers and the product)."""
    return run_matmul(kernel, a, b, tile)[0]
