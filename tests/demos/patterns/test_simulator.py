"""What Numba's CUDA simulator hides, seen: races on shared memory, uneven barriers, warp shuffles.

The simulator runs a block's threads one at a time, so a racy ``local[v] += 1``
counts right there, a barrier inside ``if t < step:`` sums right there, and two
``cuda.shared.array`` calls on one line share one buffer. Each test here gives
a kernel that makes one of these mistakes to the instrumented simulator
(:mod:`demos.patterns.simulator`) or to a chapter check and expects it named; and
gives the correct variants (a butterfly with ``shfl_xor_sync``, ``atomic.inc``,
one value per thread, a grid-stride tile loop) and expects them accepted.
Small sizes: the whole file runs in seconds on a laptop.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, float64

import demos.patterns  # noqa: F401  (gives the simulator its warp collectives)
from demos.checks import passes
from demos.patterns import reports
from demos.patterns.simulator import AccessLog, simulated
from demos.patterns.simwarp import WarpError
from demos.patterns.sizes import N_BINS


def _defined(source: str, name: str) -> object:
    """A kernel as a notebook cell (or the trusted grader) makes it: exec'd, not from ``demos``."""
    namespace: dict[str, object] = {"__name__": "student_cell"}
    exec("import numpy as np\nfrom numba import cuda, float32, float64, int32", namespace)  # noqa: S102
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - test kernels
    return namespace[name]


def _verdict(name: str, source: str, capsys) -> tuple[bool, str]:
    ok = passes(name, _defined(source, name))
    return ok, capsys.readouterr().out


def _run(kernel, grid, block, *args) -> AccessLog:
    log = AccessLog()
    with log.counting():
        simulated(kernel)[grid, block](*args)
    return log


# -- kernels with the mistakes (as a student writes them) and their right variants

RACY_SHARED_HISTOGRAM = """
from demos.patterns.sizes import N_BINS
@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    for b in range(t, N_BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        local[values[i]] += 1
    cuda.syncthreads()
    for b in range(t, N_BINS, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])
"""

UNZEROED_SHARED_HISTOGRAM = """
from demos.patterns.sizes import N_BINS
@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, values[i], 1)
    cuda.syncthreads()
    for b in range(t, N_BINS, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])
"""

ONE_PER_THREAD_SHARED_HISTOGRAM = """
from demos.patterns.sizes import N_BINS
@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    if t < N_BINS:
        local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(local, values[i], 1)
    cuda.syncthreads()
    if t < N_BINS and local[t] > 0:
        cuda.atomic.add(bins, t, local[t])
"""

INC_HISTOGRAM = """
@cuda.jit
def histogram_atomic(values, bins):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.inc(bins, values[i], values.shape[0])
"""

ONE_PER_THREAD_HISTOGRAM = """
@cuda.jit
def histogram_atomic(values, bins):
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(bins, values[i], 1)
"""

TREE = """
THREADS = 64
@cuda.jit
def block_sum_kernel(values, partial):
    cache = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[t] = values[i] if i < values.size else 0.0
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
{barrier}
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = cache[0]
"""
BARRIER_INSIDE_IF = TREE.format(barrier="            cuda.syncthreads()")
BARRIER_AFTER_IF = TREE.format(barrier="        cuda.syncthreads()")
NO_BARRIER_IN_LOOP = TREE.format(barrier="        pass")

TILED = """
TILE = 8
@cuda.jit
def tiled_distance_kernel(x, y, out):
    {arrays}
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    {loop}
        i = bi * TILE + ty
        j = bj * TILE + tx
        {early_return}
        if ty == 0 and j < y.shape[0]:
            for k in range(3):
                ys[tx, k] = y[j, k]
        if tx == 0 and i < x.shape[0]:
            for k in range(3):
                xs[ty, k] = x[i, k]
        cuda.syncthreads()
        if i < out.shape[0] and j < out.shape[1]:
            acc = 0.0
            for k in range(3):
                d = xs[ty, k] - ys[tx, k]
                acc += d * d
            out[i, j] = acc
        cuda.syncthreads()
"""
_TWO_LINES = (
    "xs = cuda.shared.array((TILE, 3), float64)\n    ys = cuda.shared.array((TILE, 3), float64)"
)
_ONE_TILE = "for bi, bj in ((cuda.blockIdx.y, cuda.blockIdx.x),):"
TILED_EARLY_RETURN = TILED.format(
    arrays=_TWO_LINES,
    loop=_ONE_TILE,
    early_return="if i >= out.shape[0] or j >= out.shape[1]:\n            return",
)
TILED_ONE_LINE = TILED.format(
    arrays="xs, ys = cuda.shared.array((TILE, 3), float64), cuda.shared.array((TILE, 3), float64)",
    loop=_ONE_TILE,
    early_return="",
)
TILED_GRID_STRIDE = TILED.format(
    arrays=_TWO_LINES,
    loop="for bi in range(cuda.blockIdx.y, (out.shape[0] + TILE - 1) // TILE, cuda.gridDim.y):\n"
    "      for bj in range(cuda.blockIdx.x, (out.shape[1] + TILE - 1) // TILE, cuda.gridDim.x):",
    early_return="",
)

COALESCED_GRID_STRIDE = """
@cuda.jit
def coalesced_distance_kernel(x, y, out):
    j0, i0 = cuda.grid(2)
    sj, si = cuda.gridsize(2)
    for i in range(i0, out.shape[0], si):
        for j in range(j0, out.shape[1], sj):
            acc = 0.0
            for k in range(x.shape[1]):
                d = x[i, k] - y[j, k]
                acc += d * d
            out[i, j] = acc
"""

WARP_SUM = """
BLOCK = 64
WARPS = BLOCK // 32
@cuda.jit
def warp_sum(values, partial):
    shared = cuda.shared.array(WARPS, float32)
    t = cuda.threadIdx.x
    lane, warp = t % 32, t // 32
    acc = float32(0)
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        acc += values[i]
    offset = 16
    while offset > 0:
        {shuffle}
        offset //= 2
    if lane == 0:
        shared[warp] = acc
    cuda.syncthreads()
    if t == 0:
        total = float32(0)
        for w in range(WARPS):
            total += shared[w]
        partial[cuda.blockIdx.x] = total
"""
BUTTERFLY = WARP_SUM.format(shuffle="acc += cuda.shfl_xor_sync(0xFFFFFFFF, acc, offset)")
HALF_WARP_SHUFFLE = WARP_SUM.format(
    shuffle="if lane < 16:\n            acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)"
)


# -- the instrumented simulator


def test_a_racy_shared_increment_is_a_race_and_atomics_are_not() -> None:
    values = np.random.default_rng(1).integers(0, N_BINS, 200).astype(np.int32)
    racy = reports.histogram_report(
        _defined(RACY_SHARED_HISTOGRAM, "histogram_shared"), values, N_BINS, 2, 32
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
    inside = reports.block_sum_report(_defined(BARRIER_INSIDE_IF, "block_sum_kernel"), x, 2, 64)
    np.testing.assert_allclose(inside["partial"], reports.expected_block_sums(x, 2, 64))
    assert inside["blocks_with_uneven_barriers"] == 2
    assert (inside["fewest_barriers_per_thread"], inside["most_barriers_per_thread"]) == (1, 7)
    after = reports.block_sum_report(_defined(BARRIER_AFTER_IF, "block_sum_kernel"), x, 2, 64)
    assert after["blocks_with_uneven_barriers"] == 0 and after["racy_shared_reads"] == 0
    assert after["fewest_barriers_per_thread"] == after["most_barriers_per_thread"] == 7
    missing = reports.block_sum_report(_defined(NO_BARRIER_IN_LOOP, "block_sum_kernel"), x, 2, 64)
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
    kernel = _defined(HALF_WARP_SHUFFLE, "warp_sum")
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
    ordered = _run(
        _defined(source.format(sync="cuda.syncwarp()"), "neighbours"), 1, 32, values, out
    )
    assert ordered.racy_shared_reads() == 0
    racy = _run(_defined(source.format(sync="pass"), "neighbours"), 1, 32, values, out)
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
        _defined(UNZEROED_SHARED_HISTOGRAM, "histogram_shared"), values, N_BINS, 2, 32
    )
    assert report["uninitialised_shared_reads"] > 0
    assert (report["counts"] > len(values)).any()  # shared memory starts with garbage


def test_every_atomic_function_counts_as_an_atomic() -> None:
    values = np.random.default_rng(6).integers(0, N_BINS, 120).astype(np.int32)
    report = reports.histogram_report(
        _defined(INC_HISTOGRAM, "histogram_atomic"), values, N_BINS, 2, 32
    )
    np.testing.assert_array_equal(report["counts"], np.bincount(values, minlength=N_BINS))
    assert report["plain_writes_to_bins"] == 0 and report["atomics_on_bins"] == len(values)


# -- the chapter checks: each mistake named, each right variant accepted


@pytest.mark.parametrize(
    "name, source, words",
    [
        ("histogram_shared", RACY_SHARED_HISTOGRAM, ["wrote local[", "cuda.atomic.add(local"]),
        ("histogram_shared", UNZEROED_SHARED_HISTOGRAM, ["before any thread", "Zero the block"]),
        ("block_sum_kernel", BARRIER_INSIDE_IF, ["reached 1 cuda.syncthreads()", "after the `if"]),
        ("block_sum_kernel", NO_BARRIER_IN_LOOP, ["between the same two barriers", "halving"]),
        ("tiled_distance_kernel", TILED_EARLY_RETURN, ["reached 0 cuda.syncthreads()", "`return`"]),
        ("warp_sum", HALF_WARP_SHUFFLE, ["shfl_down_sync", "lane"]),
    ],
    ids=["racy-shared", "unzeroed", "barrier-in-if", "no-barrier", "early-return", "half-warp"],
)
def test_a_mistake_the_simulator_hides_gets_its_own_message(name, source, words, capsys) -> None:
    ok, said = _verdict(name, source, capsys)
    assert not ok, said
    for word in words:
        assert word in said, f"{word!r} not in {said}"


@pytest.mark.parametrize(
    "name, source, words",
    [
        ("warp_sum", BUTTERFLY, ["shfl_xor_sync"]),
        ("histogram_atomic", INC_HISTOGRAM, ["unsigned"]),
        ("histogram_atomic", ONE_PER_THREAD_HISTOGRAM, ["launched 13 blocks of 32 (416 threads)"]),
        ("histogram_shared", ONE_PER_THREAD_SHARED_HISTOGRAM, ["launched 13 blocks"]),
        ("tiled_distance_kernel", TILED_ONE_LINE, []),
        ("tiled_distance_kernel", TILED_GRID_STRIDE, []),
        ("coalesced_distance_kernel", COALESCED_GRID_STRIDE, []),
        ("block_sum_kernel", BARRIER_AFTER_IF, []),
    ],
    ids=[
        "butterfly",
        "atomic-inc",
        "one-per-thread",
        "shared-one-per-thread",
        "two-arrays-one-line",
        "tiled-grid-stride",
        "coalesced-grid-stride",
        "tree",
    ],
)
def test_a_different_but_right_answer_passes(name, source, words, capsys) -> None:
    ok, said = _verdict(name, source, capsys)
    assert ok, said
    for word in words:
        assert word in said, f"{word!r} not in {said}"


def test_a_racy_global_histogram_is_told_why(capsys) -> None:
    source = """
@cuda.jit
def histogram_atomic(values, bins):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        bins[values[i]] += 1
"""
    ok, said = _verdict("histogram_atomic", source, capsys)
    assert not ok and "plain writes" in said and "cuda.atomic.add" in said


def test_a_wrong_histogram_says_how_many_threads_the_check_launches(capsys) -> None:
    source = """
@cuda.jit
def histogram_atomic(values, bins):
    i = cuda.grid(1)
    if 0 < i < values.shape[0]:
        cuda.atomic.add(bins, values[i], 1)
"""
    ok, said = _verdict("histogram_atomic", source, capsys)
    assert not ok and "launches 2 blocks of 32 threads (64 threads) for 400 values" in said


def test_busy_fraction_that_shortens_the_reach_is_caught(capsys) -> None:
    source = """
def busy_fraction(intervals):
    busy, reach = 0.0, None
    for s, e in sorted(intervals):
        if reach is None or s > reach:
            busy += e - s
        elif e > reach:
            busy += e - reach
        reach = e
    span = max(e for s, e in intervals) - min(s for s, e in intervals)
    return busy / span
"""
    ok, said = _verdict("busy_fraction", source, capsys)
    assert not ok and "max(reach, e)" in said


def test_array_checks_see_numpy_only_code_and_whole_matrix_copies(capsys) -> None:
    hard_coded = """
def row_norms(x):
    return np.einsum("ij,ij->i", x, x)
"""
    ok, said = _verdict("row_norms", hard_coded, capsys)
    assert not ok and "get_array_module" in said and "CuPy stand-in" in said
    whole_matrix = """
from demos.distance.generic import get_array_module
def nearest_neighbour(x):
    xp = get_array_module(x)
    x2 = xp.einsum("ij,ij->i", x, x)
    d = x2[:, None] - 2 * (x @ x.T) + x2[None, :]
    d = d if xp is np else d.get()
    np.fill_diagonal(d, np.inf)
    return d.argmin(axis=1)
"""
    ok, said = _verdict("nearest_neighbour", whole_matrix, capsys)
    assert not ok and "only the 2 indices need to travel" in said
    with_cupy_module = """
import cupy
def row_norms(x):
    xp = cupy.get_array_module(x)
    return xp.einsum("ij,ij->i", x, x)
"""
    pytest.importorskip("cupy")  # last: the cases above need no CuPy
    ok, said = _verdict("row_norms", with_cupy_module, capsys)
    assert ok, said


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
