"""Checks for the "your turn" cells of chapter 4 (Numba CUDA kernels).

The distance kernels all take ``(x, y, out)`` with ``out[i, j] = |x_i - y_j|^2``.
They are launched on *rectangular* outputs (fewer rows than columns and the
other way round), so that a kernel whose index order does not match the
launch leaves entries unwritten or writes into the guard band, and the check
can say which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from demos.checks._harness import (
    CheckFailed,
    GuardedOutput,
    blocks,
    compare,
    launch,
    on_gpu,
    require_shared_memory,
)

SHAPES = [(1, 1), (5, 12), (12, 5), (19, 19)]  # (rows n, columns m): partial blocks on purpose


def _points(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, 3)), rng.random((m, 3))
    return x, y, ((x[:, None, :] - y[None, :, :]) ** 2).sum(axis=-1)


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
            launch(kernel, grid_for(n, m), block, x, y, out.view, what=what)
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
    rng = np.random.default_rng(8)
    for n in [1, 64, 100, 200] + ([1_000_000] if on_gpu() else []):
        values = rng.random(n)
        n_blocks = blocks(n, threads)
        partial = GuardedOutput((n_blocks,))
        what = f"n = {n}, {n_blocks} block(s) of {threads}"
        launch(kernel, n_blocks, threads, values, partial.view, what=what)
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
