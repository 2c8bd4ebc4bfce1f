"""The SIMT model in its smallest form: one loop, rewritten as one thread per element.

Chapter 2 contrasts a CPU loop that walks over an array one element after
another with a CUDA kernel in which each *thread* handles one element and the
loop disappears into the launch configuration (blocks of threads in a grid).
What the chapters call from here: :func:`add_to_loop` (chapter 2 prints and
runs it), :func:`thread_coordinates` (chapter 2's table of which thread takes
which element) and :func:`draw_launch` (the launch pictures of chapters 1
and 2). The kernel side, :func:`add_to_kernel` with :func:`blocks_for` and
:func:`add_to`, and :func:`divergent_kernel`, is what the chapter has students
write themselves (their model answers, with the checks, are in
:mod:`demos.checks`): it is kept here as the course's reference, tested against
the loop and NumPy (``tests/demos/test_simt.py``), and it is what the grader
recognises when a submission imports the course's code instead of writing its
own. The kernels are tiny on purpose: they also run in Numba's CUDA simulator,
where every CUDA thread is a Python thread, so keep arrays small (a few hundred
elements) there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda

__all__ = [
    "add_to",
    "add_to_kernel",
    "add_to_loop",
    "blocks_for",
    "divergent_kernel",
    "draw_launch",
    "thread_coordinates",
]


def add_to_loop(source: np.ndarray, target: np.ndarray) -> None:
    """target[i] += source[i] for every i, one element after the other (the CPU way)."""
    if source.shape != target.shape:
        raise ValueError(
            f"source and target need the same shape, got {source.shape} and {target.shape}"
        )
    for i in range(target.size):
        target[i] += source[i]


@cuda.jit
def add_to_kernel(source, target):
    """The loop body of :func:`add_to_loop`, run by every thread for its own index i."""
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x
    if i < target.size:  # the last block may have threads past the end: they do nothing
        target[i] += source[i]


def blocks_for(n: int, threads_per_block: int) -> int:
    """How many blocks of *threads_per_block* threads cover *n* elements (rounded up)."""
    if n < 0 or threads_per_block < 1:
        raise ValueError(f"need n >= 0 and threads_per_block >= 1, got {n} and {threads_per_block}")
    return math.ceil(n / threads_per_block)


def add_to(source: np.ndarray, target: np.ndarray, threads_per_block: int = 32) -> None:
    """Launch :data:`add_to_kernel` over all of *target* (host arrays are copied in and back)."""
    if source.shape != target.shape or source.ndim != 1:
        raise ValueError(
            "source and target must be 1-D arrays of one shape, "
            f"got {source.shape} and {target.shape}"
        )
    blocks = max(1, blocks_for(target.size, threads_per_block))
    add_to_kernel[blocks, threads_per_block](source, target)


@cuda.jit
def _record_coordinates(block, thread, global_index):
    i = cuda.grid(1)
    if i < global_index.size:
        block[i] = cuda.blockIdx.x
        thread[i] = cuda.threadIdx.x
        global_index[i] = i


def thread_coordinates(n: int, threads_per_block: int) -> dict[str, np.ndarray]:
    """Launch a kernel in which each of *n* threads writes down who it is.

    Returns arrays ``block``, ``thread`` and ``global_index`` (one entry per element),
    which makes the arithmetic ``blockIdx.x * blockDim.x + threadIdx.x`` visible.
    """
    block = np.full(n, -1, dtype=np.int32)
    thread = np.full(n, -1, dtype=np.int32)
    global_index = np.full(n, -1, dtype=np.int32)
    _record_coordinates[max(1, blocks_for(n, threads_per_block)), threads_per_block](
        block, thread, global_index
    )
    return {"block": block, "thread": thread, "global_index": global_index}


@cuda.jit
def divergent_kernel(values, out):
    """Even and odd threads take different branches: within a warp both paths run one after the
    other."""
    i = cuda.grid(1)
    if i < values.size:
        if i % 2 == 0:
            out[i] = values[i] * 2.0
        else:
            out[i] = values[i] + 100.0


def draw_launch(n: int, threads_per_block: int, warp_size: int = 32) -> Any:
    """Draw the grid of a 1-D launch: blocks as boxes, threads as cells, idle threads greyed.

    Each cell is labelled with its global index ``blockIdx.x * blockDim.x + threadIdx.x``;
    colours alternate per warp, so a block that is not a multiple of the warp
    size shows its partly used last warp.
    """
    import matplotlib.pyplot as plt  # the notebook's backend: the figure shows inline

    n_blocks = max(1, blocks_for(n, threads_per_block))
    fig, ax = plt.subplots(
        figsize=(min(12, max(6.0, 1.5 + 0.32 * threads_per_block)), 1.2 + 0.55 * n_blocks)
    )
    warp_colours = ("#9ecae1", "#fdd0a2")
    for b in range(n_blocks):
        y = n_blocks - 1 - b
        for t in range(threads_per_block):
            i = b * threads_per_block + t
            idle = i >= n
            colour = "#dddddd" if idle else warp_colours[(t // warp_size) % 2]
            ax.add_patch(plt.Rectangle((t, y + 0.1), 0.95, 0.8, color=colour))
            ax.text(
                t + 0.47, y + 0.5, "–" if idle else str(i), ha="center", va="center", fontsize=7
            )
        ax.add_patch(
            plt.Rectangle((-0.1, y + 0.02), threads_per_block + 0.1, 0.96, fill=False, lw=1.5)
        )
        ax.text(-0.4, y + 0.5, f"block {b}", ha="right", va="center", fontsize=9)
    ax.set_xlim(-3.5, threads_per_block + 0.2)
    ax.set_ylim(-0.1, n_blocks + 0.1)
    ax.set_xticks(range(threads_per_block))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("threadIdx.x  (cell: global index i; grey: past the end)")
    ax.set_yticks([])
    ax.set_title(f"grid of {n_blocks} blocks x {threads_per_block} threads for n = {n}")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig
