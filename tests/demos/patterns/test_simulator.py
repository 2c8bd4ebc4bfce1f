"""What Numba's CUDA simulator hides, seen by the instrumented simulator: shared-memory races,
uneven barriers, warp shuffles.

The simulator runs a block's threads one at a time, so a racy ``local[v] += 1``
counts right there, a barrier inside ``if t < step:`` sums right there, and two
``cuda.shared.array`` calls on one line share one buffer. Each test here gives
a kernel that makes one of these mistakes (tests/simulator_kernels.py) to the
instrumented simulator (:mod:`demos.patterns.simulator`) and expects it seen,
and gives the correct variants and expects them clean. The chapter checks'
messages for the same mistakes are tested in test_simulator_mistakes_in_checks.py.
Small sizes: the whole file runs in seconds on a laptop.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, float64
from simulator_kernels import (
    BARRIER_AFTER_IF,
    BARRIER_INSIDE_IF,
    HALF_WARP_SHUFFLE,
    INC_HISTOGRAM,
    NO_BARRIER_IN_LOOP,
    RACY_SHARED_HISTOGRAM,
    UNZEROED_SHARED_HISTOGRAM,
    defined,
)

import demos.patterns  # noqa: F401  (gives the simulator its warp collectives)
from demos.patterns import reports
from demos.patterns.simulator import AccessLog, simulated
from demos.patterns.simwarp import WarpError
from demos.patterns.sizes import N_BINS


def _run(kernel, grid, block, *args) -> AccessLog:
    log = AccessLog()
    with log.counting():
        simulated(kernel)[grid, block](*args)
    return log


def test_a_racy_shared_increment_is_a_race_and_atomics_are_not() -> None:
    values = np.random.default_rng(1).integers(0, N_BINS, 200).astype(np.int32)
    racy = reports.histogram_report(
        defined(RACY_SHARED_HISTOGRAM, "histogram_shared"), values, N_BINS, 2, 32
    )
    np.testing.assert_array_equal(racy["counts"], np.bincount(values, minlength=N_BINS))
    assert racy["racy_shared_writes"] > 0  # right counts, all the same: the simulator hid it


def test_the_model_kernels_have_no_race_and_even_barriers() -> None:
    values = np.random.default_rng(2).integers(0, N_BINS, 200).astype(np.int32)
    from demos.patterns import kernels

    for kernel in (kernels.histogram_shared_kernel(N_BINS), kernels.histogram_global_atomic):
        report = reports.histogram_report(kernel, values, N_BINS, 2, 32)
        assert report["racy_shared_writes"] == report["racy_shared_reads"] == 0
        assert report["uninitialised_shared_reads"] == report["blocks_with_uneven_barriers"] == 0
        assert report["fewest_barriers_per_thread"] == report["most_barriers_per_thread"]
    x = np.random.default_rng(3).random(700).astype(np.float32)
    for kernel in (kernels.tree_sum_kernel("float32"), kernels.warp_sum_kernel("float32")):
        report = reports.block_sum_report(kernel, x, 2, kernels.BLOCK)
        assert report["racy_shared_writes"] == report["racy_shared_reads"] == 0
        assert report["blocks_with_uneven_barriers"] == 0
        assert report["threads_launched"] == 2 * kernels.BLOCK


def test_a_barrier_inside_an_if_is_uneven_and_a_missing_one_is_a_race() -> None:
    x = np.random.default_rng(4).random(100)
    inside = reports.block_sum_report(defined(BARRIER_INSIDE_IF, "block_sum_kernel"), x, 2, 64)
    np.testing.assert_allclose(inside["partial"], reports.expected_block_sums(x, 2, 64))
    assert inside["blocks_with_uneven_barriers"] == 2
    assert (inside["fewest_barriers_per_thread"], inside["most_barriers_per_thread"]) == (1, 7)
    after = reports.block_sum_report(defined(BARRIER_AFTER_IF, "block_sum_kernel"), x, 2, 64)
    assert after["blocks_with_uneven_barriers"] == 0 and after["racy_shared_reads"] == 0
    assert after["fewest_barriers_per_thread"] == after["most_barriers_per_thread"] == 7
    missing = reports.block_sum_report(defined(NO_BARRIER_IN_LOOP, "block_sum_kernel"), x, 2, 64)
    assert missing["racy_shared_reads"] > 0


def test_warp_shuffles_have_warp_semantics() -> None:
    @cuda.jit
    def shuffles(values, out):
        t = cuda.threadIdx.x
        v = values[t]
        out[0, t] = cuda.shfl_sync(0xFFFFFFFF, v, 5)
        out[1, t] = cuda.shfl_up_sync(0xFFFFFFFF, v, 3)
        out[2, t] = cuda.shfl_down_sync(0xFFFFFFFF, v, 3)
        out[3, t] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
        cuda.syncwarp()
        out[4, t] = cuda.ballot_sync(0xFFFFFFFF, v % 3 == 0)
        out[5, t] = cuda.all_sync(0xFFFFFFFF, v < 48)
        out[6, t] = cuda.lanemask_lt()
        out[7, t] = cuda.activemask()

    v = np.arange(64, dtype=np.int64)
    out = np.zeros((8, 64), np.int64)
    simulated(shuffles)[1, 64](v, out)  # two warps of 32: lanes of consecutive threads
    lane, base = v % 32, v - v % 32
    np.testing.assert_array_equal(out[0], base + 5)
    np.testing.assert_array_equal(out[1], np.where(lane >= 3, v - 3, v))
    np.testing.assert_array_equal(out[2], np.where(lane + 3 < 32, v + 3, v))
    np.testing.assert_array_equal(out[3], v ^ 1)
    assert out[4, 0] == sum(1 << i for i in range(32) if i % 3 == 0)
    assert out[4, 32] == sum(1 << i for i in range(32) if (32 + i) % 3 == 0)
    assert list(out[5, [0, 32]]) == [1, 0]
    np.testing.assert_array_equal(out[6], (1 << lane) - 1)
    np.testing.assert_array_equal(out[7], 0xFFFFFFFF)


def test_a_warp_shuffle_not_every_named_lane_reaches_stops_with_a_sentence() -> None:
    kernel = defined(HALF_WARP_SHUFFLE, "warp_sum")
    with pytest.raises(WarpError, match="lane 16, which (has returned|waits at cuda.syncthreads)"):
        simulated(kernel)[1, 64](np.ones(64, np.float32), np.zeros(1, np.float32))

    @cuda.jit
    def shuffle_against_barrier(values, out):
        t = cuda.threadIdx.x
        v = values[t]
        if t < 16:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, 16)
        else:
            cuda.syncthreads()
        out[t] = v

    with pytest.raises(WarpError, match="waits at cuda.syncthreads\\(\\): on a GPU this hangs"):
        simulated(shuffle_against_barrier)[1, 32](np.ones(32), np.zeros(32))


def test_syncwarp_orders_shared_accesses_within_a_warp() -> None:
    source = """
@cuda.jit
def neighbours(values, out):
    buf = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    buf[t] = values[t]
    {sync}
    out[t] = buf[(t + 1) % 32]
"""
    values, out = np.arange(32.0), np.zeros(32)
    ordered = _run(defined(source.format(sync="cuda.syncwarp()"), "neighbours"), 1, 32, values, out)
    assert ordered.racy_shared_reads() == 0
    racy = _run(defined(source.format(sync="pass"), "neighbours"), 1, 32, values, out)
    assert racy.racy_shared_reads() > 0


def test_two_shared_arrays_on_one_line_get_their_own_buffers() -> None:
    @cuda.jit
    def two(values, out):
        a, b = cuda.shared.array(4, float64), cuda.shared.array(4, float64)
        t = cuda.threadIdx.x
        a[t] = values[t]
        b[t] = 10 * values[t]
        cuda.syncthreads()
        out[t] = a[3 - t] + b[t]

    values, out = np.arange(4.0), np.zeros(4)
    simulated(two)[1, 4](values, out)  # plain simulator, not counting
    np.testing.assert_array_equal(out, values[::-1] + 10 * values)
    log = _run(two, 1, 4, values, np.zeros(4))
    assert log.shared_arrays == 8 and log.problems() == []


def test_uninitialised_shared_memory_is_seen_and_not_zero() -> None:
    values = np.random.default_rng(5).integers(0, N_BINS, 100).astype(np.int32)
    report = reports.histogram_report(
        defined(UNZEROED_SHARED_HISTOGRAM, "histogram_shared"), values, N_BINS, 2, 32
    )
    assert report["uninitialised_shared_reads"] > 0
    assert (report["counts"] > len(values)).any()  # shared memory starts with garbage


def test_every_atomic_function_counts_as_an_atomic() -> None:
    values = np.random.default_rng(6).integers(0, N_BINS, 120).astype(np.int32)
    report = reports.histogram_report(
        defined(INC_HISTOGRAM, "histogram_atomic"), values, N_BINS, 2, 32
    )
    np.testing.assert_array_equal(report["counts"], np.bincount(values, minlength=N_BINS))
    assert report["plain_writes_to_bins"] == 0 and report["atomics_on_bins"] == len(values)


def test_rows_of_a_shared_tile_are_told_apart() -> None:
    """``tile[ty][k]`` goes through a row view: its elements are the tile's, not the row's."""

    @cuda.jit
    def rows(values, out):
        tile = cuda.shared.array((4, 2), float64)
        t = cuda.threadIdx.x
        tile[t][0] = values[t]
        tile[t][1] = 2 * values[t]
        cuda.syncthreads()
        out[t] = tile[3 - t][0] + tile[t][1]

    values, out = np.arange(4.0), np.zeros(4)
    log = _run(rows, 1, 4, values, out)
    np.testing.assert_array_equal(out, values[::-1] + 2 * values)
    assert log.problems() == []
