"""Chapter 4b's tiled matrix multiply check: right answers pass, each usual mistake gets its
own sentence.

Why: in the simulator a block's threads run one at a time, so a tile loaded
without the second barrier, or a barrier inside ``if i < n and j < m:``, often
gives the right product there and a wrong one (or a hang) on a GPU. The check
counts barriers and shared-memory accesses per thread; these tests hold it to
naming each fault, and to accepting correct kernels that differ from the model
answer (another tile size, another way to index and load).
"""

from __future__ import annotations

import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers and shuffles)
from demos.checks import answer_source, passes
from helpers import notebook_cell

# the model answer's body with one thing changed, so each test names what differs
MODEL = answer_source("tiled_matmul")
SECOND_BARRIER = "        cuda.syncthreads()  # before the next step overwrites the tiles\n"
assert SECOND_BARRIER in MODEL


def _kernel(source: str):
    return notebook_cell(source, "tiled_matmul")


def _verdict(source: str, capsys) -> tuple[bool, str]:
    ok = passes("tiled_matmul", _kernel(source))
    return ok, capsys.readouterr().out


def test_the_model_answer_passes_and_says_what_it_saved(capsys) -> None:
    ok, said = _verdict(MODEL, capsys)
    assert ok, said
    assert "16 x 16 tiles" in said and "naive kernel makes 42" in said


OTHER_CORRECT = """
from numba import cuda, float32

TILE = 8


@cuda.jit
def tiled_matmul(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb_t = cuda.shared.array((TILE, TILE), float32)  # b's tile stored transposed
    j, i = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n, depth, m = a.shape[0], a.shape[1], b.shape[1]
    total = 0.0
    steps = (depth + TILE - 1) // TILE
    step = 0
    while step < steps:
        col = step * TILE + tx
        row = step * TILE + ty
        sa[ty, tx] = a[i, col] if i < n and col < depth else 0.0
        sb_t[tx, ty] = b[row, j] if row < depth and j < m else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            total += sa[ty, k] * sb_t[tx, k]
        cuda.syncthreads()
        step += 1
    if i < n and j < m:
        c[i, j] = total
"""


def test_another_tile_size_and_another_way_of_loading_pass(capsys) -> None:
    ok, said = _verdict(OTHER_CORRECT, capsys)
    assert ok, said
    assert "8 x 8 tiles" in said


def test_a_tile_loaded_without_the_second_barrier_is_a_named_race(capsys) -> None:
    ok, said = _verdict(MODEL.replace(SECOND_BARRIER, ""), capsys)
    assert not ok
    assert "loaded without the second barrier" in said, said
    assert "between the same two barriers" in said  # who read and who overwrote, and where
    assert "after the loop over k" in said


def test_a_barrier_inside_an_if_is_named(capsys) -> None:
    guarded = MODEL.replace(
        "    for start in range(0, a.shape[1], TILE):\n",
        "    if i >= c.shape[0] or j >= c.shape[1]:\n        return\n"
        "    for start in range(0, a.shape[1], TILE):\n",
    )
    ok, said = _verdict(guarded, capsys)
    assert not ok
    assert "every thread of a block must reach every barrier" in said, said
    assert "inside an `if`" in said and "load 0 into the tiles" in said

    inside_if = MODEL.replace(
        "        cuda.syncthreads()  # every thread, also those past the edge of c\n",
        "        if i < c.shape[0] and j < c.shape[1]:\n            cuda.syncthreads()\n",
    )
    ok, said = _verdict(inside_if, capsys)
    assert not ok and "inside an `if`" in said, said


def test_a_missing_first_barrier_is_named(capsys) -> None:
    first = "        cuda.syncthreads()  # every thread, also those past the edge of c\n"
    ok, said = _verdict(MODEL.replace(first, ""), capsys)
    assert not ok
    assert "before the others had loaded them" in said, said


def test_a_wrong_product_names_an_entry(capsys) -> None:
    off_by_one = MODEL.replace("for k in range(TILE):", "for k in range(TILE - 1):")
    ok, said = _verdict(off_by_one, capsys)
    assert not ok
    assert "entry (" in said and "expected" in said, said


def test_tiles_not_zeroed_past_the_edge_are_named(capsys) -> None:
    unzeroed = MODEL.replace("        else:\n            a_tile[ty, tx] = 0\n", "").replace(
        "        else:\n            b_tile[ty, tx] = 0\n", ""
    )
    ok, said = _verdict(unzeroed, capsys)
    assert not ok
    assert "store 0 in the tile" in said, said


def test_reading_operands_from_global_memory_is_not_tiling(capsys) -> None:
    from_global = MODEL.replace(
        "acc += a_tile[ty, k] * b_tile[k, tx]",
        "acc += a[i, start + k] * b[start + k, j] if i < a.shape[0] and j < b.shape[1] "
        "and start + k < a.shape[1] else 0",
    )
    ok, said = _verdict(from_global, capsys)
    assert not ok
    assert "read from the shared tiles" in said.lower() or "from the shared tiles" in said, said


def test_a_naive_kernel_is_told_to_use_shared_memory(capsys) -> None:
    naive = """
from numba import cuda

@cuda.jit
def tiled_matmul(a, b, c):
    j, i = cuda.grid(2)
    if i < c.shape[0] and j < c.shape[1]:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc
"""
    ok, said = _verdict(naive, capsys)
    assert not ok and "does not use shared or syncthreads" in said, said


def test_an_unguarded_load_past_the_edge_is_explained(capsys) -> None:
    unguarded = MODEL.replace(
        "        if i < a.shape[0] and start + tx < a.shape[1]:\n"
        "            a_tile[ty, tx] = a[i, start + tx]\n"
        "        else:\n            a_tile[ty, tx] = 0\n",
        "        a_tile[ty, tx] = a[i, start + tx]\n",
    )
    ok, said = _verdict(unguarded, capsys)
    assert not ok
    assert "outside a matrix" in said and "store 0 in the tile" in said, said


@pytest.mark.parametrize("tile", [4, 16])
def test_the_course_kernel_passes_at_any_tile(tile: int, capsys) -> None:
    from demos.patterns import matmul

    assert passes("tiled_matmul", matmul.tiled_matmul_kernel(tile)), capsys.readouterr().out
    assert f"{tile} x {tile} tiles" in capsys.readouterr().out
    assert matmul.tile_of(matmul.tiled_matmul_kernel(tile)) == tile


@pytest.mark.gpu
def test_on_a_gpu_the_compiled_kernel_runs_and_a_write_past_the_edge_is_caught(capsys) -> None:
    """The check's GPU branch launches the compiled kernel on 300 x 500 times 500 x 200 into a
    guarded output: the model answer passes, a kernel without the column guard writes into the
    guard band (on a GPU nothing raises) and is named for it."""
    from demos.checks import pattern_checks

    assert pattern_checks.on_gpu(), "a GPU, but Numba runs the simulator"
    ok, said = _verdict(MODEL, capsys)
    assert ok, said
    guard = "    if i < c.shape[0] and j < c.shape[1]:\n        c[i, j] = acc"
    assert guard in MODEL
    unguarded = MODEL.replace(guard, "    if i < c.shape[0]:\n        c[i, j] = acc")
    with pytest.raises(pattern_checks.CheckFailed, match="wrote outside the output"):
        pattern_checks._on_the_gpu(_kernel(unguarded), 16)
