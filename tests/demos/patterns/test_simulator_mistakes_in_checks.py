"""The chapter checks name each mistake Numba's CUDA simulator hides, and accept right variants.

Each test gives a kernel (tests/simulator_kernels.py), or a function, as a
student writes it to :func:`demos.checks.passes` and expects the mistake named
in what the check prints (a racy shared increment, an unzeroed shared array, a
barrier inside an ``if``, an early return, a half-warp shuffle, plain writes to
global bins, NumPy-only code) or a different but right answer (a butterfly
with ``shfl_xor_sync``, ``atomic.inc``, one value per thread, a grid-stride
tile loop) accepted. Small sizes: the whole file runs in seconds on a laptop.
"""

from __future__ import annotations

import pytest
from simulator_kernels import (
    BARRIER_AFTER_IF,
    BARRIER_INSIDE_IF,
    BUTTERFLY,
    COALESCED_GRID_STRIDE,
    HALF_WARP_SHUFFLE,
    INC_HISTOGRAM,
    NO_BARRIER_IN_LOOP,
    ONE_PER_THREAD_HISTOGRAM,
    ONE_PER_THREAD_SHARED_HISTOGRAM,
    RACY_SHARED_HISTOGRAM,
    TILED_EARLY_RETURN,
    TILED_GRID_STRIDE,
    TILED_ONE_LINE,
    UNZEROED_SHARED_HISTOGRAM,
    defined,
)

import demos.patterns  # noqa: F401  (gives the simulator its warp collectives)
from demos.checks import passes


def _verdict(name: str, source: str, capsys) -> tuple[bool, str]:
    ok = passes(name, defined(source, name))
    return ok, capsys.readouterr().out


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
