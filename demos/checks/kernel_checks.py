"""Checks for the "your turn" cells of chapter 4 (Numba CUDA kernels).

The distance kernels all take ``(x, y, out)`` with ``out[i, j] = |x_i - y_j|^2``.
They are launched on *rectangular* outputs (fewer rows than columns and the
other way round), so that a kernel whose index order does not match the
launch leaves entries unwritten or writes into the guard band, and the check
can say which. The kernels with shared memory are first run once in the
simulator with their barriers and shared accesses watched (see
:func:`~demos.checks._harness.check_synchronisation`): a barrier that threads
past the edge skip, or a tile read before every thread has loaded it, gives the
right numbers in the simulator but not on a GPU. Every input a kernel reads
lies inside NaN (:class:`~demos.checks._harness.GuardedInput`): on a GPU a read
past its end raises nothing and often finds zeros, which a sum would hide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from demos.checks._harness import (
    CheckFailed,
    GuardedInput,
    GuardedOutput,
    blocks,
    check_synchronisation,
    compare,
    launch,
    on_gpu,
    require_shared_memory,
)
from demos.distance.reference import reference_distance

SHAPES = [(1, 1), (5, 12), (12, 5), (19, 19)]  # (rows n, columns m): partial blocks on purpose


def _points(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, 3)), rng.random((m, 3))
    return x, y, reference_distance(x, y)


def _shapes() -> list[tuple[int, int]]:
    return SHAPES + ([(1000, 3001)] if on_gpu() else [])


def _check_distance(
    kernel: Any, grid_for: Callable[[int, int], tuple], block: tuple, hint: str
) -> None:
    for seed, (n, m) in enumerate(_shapes()):
        x, y, want = _points(n, m, seed)
        out = GuardedOutput((n, m))
        what = f"{n} x {m} output, blocks {block}"
        try:
            x_in, y_in = GuardedInput(x), GuardedInput(y)
            launch(kernel, grid_for(n, m), block, x_in.view, y_in.view, out.view, what=what)
            compare(out.fetch(what), want, what)
        except CheckFailed as problem:
            raise CheckFailed(f"{problem} {hint}") from None


def naive_distance_kernel(kernel: Any) -> str:
    """Launched as in the original course: one block per entry, i on x, j on y."""
    _check_distance(
        kernel,
        lambda n, m: (n, m),
        (1, 1),
        "(This launch is [(n, m), (1, 1)]: x of the grid counts rows i, y counts columns j.)",
    )
    return "correct for square and rectangular outputs with the launch [(n, m), (1, 1)]."


def coalesced_distance_kernel(kernel: Any) -> str:
    """x of the grid must count columns j, so that a warp writes consecutive addresses."""
    block = (8, 4)
    _check_distance(
        kernel,
        lambda n, m: (blocks(m, block[0]), blocks(n, block[1])),
        block,
        "(This launch puts columns j on x and rows i on y: `j, i = cuda.grid(2)`.)",
    )
    return (
        "correct with columns on x: the 32 threads of a warp write neighbouring entries of a row."
    )


def tiled_distance_kernel(kernel: Any) -> str:
    require_shared_memory(
        kernel,
        "stage the block's points in cuda.shared.array and wait with "
        "cuda.syncthreads() before reading them.",
    )
    tile = 8
    x, y, _ = _points(5, 12, 0)
    check_synchronisation(
        kernel,
        (blocks(12, tile), blocks(5, tile)),
        (tile, tile),
        (x, y, np.zeros((5, 12))),
        "5 x 12 output, blocks (8, 8)",
        {
            "barriers": "Threads past the edge of the output must still reach "
            "cuda.syncthreads(): guard the loads and the write with `if`, don't `return` early.",
            "read": "Wait with cuda.syncthreads() after loading the tiles, before reading them.",
            "write": "Let one row of threads load the column points and one column the row "
            "points (or each thread its own element).",
            "uninitialised": "Every tile entry a thread reads must be loaded first, also in a "
            "partly filled tile (or not read there).",
        },
    )
    _check_distance(
        kernel,
        lambda n, m: (blocks(m, tile), blocks(n, tile)),
        (tile, tile),
        "(Blocks of TILE x TILE = 8 x 8 threads; columns on x. Do threads past the edge "
        "still reach cuda.syncthreads()?)",
    )
    return "correct with 8 x 8 tiles, also where the last tile is only partly filled."


def block_sum_kernel(kernel: Any) -> str:
    require_shared_memory(
        kernel, "sum within the block in shared memory, with a barrier between the halving steps."
    )
    threads = 64
    check_synchronisation(
        kernel,
        2,
        threads,
        (np.random.default_rng(7).random(100), np.zeros(2)),
        "n = 100, 2 blocks of 64",
        {
            "barriers": "In the tree, put cuda.syncthreads() after the `if t < step:` block "
            "(inside the loop), where all threads reach it.",
            "read": "Every halving step needs cuda.syncthreads() after it, so that the next "
            "step reads finished sums.",
            "write": "In each step only threads t < step add, each into its own element t.",
            "uninitialised": "Every thread stores a value (0 past the end) before the barrier.",
        },
    )
    rng = np.random.default_rng(8)
    for n in [1, 64, 100, 200] + ([1_000_000] if on_gpu() else []):
        values = rng.random(n)
        n_blocks = blocks(n, threads)
        partial = GuardedOutput((n_blocks,))
        what = f"n = {n}, {n_blocks} block(s) of {threads}"
        given = GuardedInput(values)  # NaN past the end: an unguarded load spoils the sum
        launch(kernel, n_blocks, threads, given.view, partial.view, what=what)
        padded = np.zeros(n_blocks * threads)
        padded[:n] = values
        compare(
            partial.fetch(what), padded.reshape(n_blocks, threads).sum(axis=1), what, rtol=1e-12
        )
    return "each block's partial sum is right, also for a last block that is only partly full."


def coalesced_grid(student: Callable[[int, int, tuple], tuple]) -> str:
    for n, m, block in [
        (100, 100, (32, 8)),
        (5, 1000, (32, 8)),
        (1000, 5, (32, 8)),
        (33, 65, (16, 16)),
    ]:
        got = tuple(student(n, m, block))
        want = (blocks(m, block[0]), blocks(n, block[1]))
        if got != want:
            raise CheckFailed(
                f"for an {n} x {m} output and blocks {block} you return {got}, expected "
                f"{want}: x counts columns (m of them), y counts rows, rounded up."
            )
    return "the grid covers every column with x and every row with y."
