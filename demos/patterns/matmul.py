"""Matrix multiply, c = a @ b, two ways: where shared memory pays (chapter 4b).

Every histogram and sum of this chapter reads each input element once, so
shared memory can only help them *combine* results. A matrix multiply is
different: every element of ``a`` (n x k) is needed by all m outputs of its
row, every element of ``b`` (k x m) by all n outputs of its column.

* :func:`naive_matmul_kernel`: one thread per output ``c[i, j]`` that reads
  row i of ``a`` and column j of ``b`` from global memory: 2 k loads per output,
  two loads for every multiply-add.
* :func:`tiled_matmul_kernel`: a block of TILE x TILE threads computes a
  TILE x TILE tile of ``c``. It walks along k in steps of TILE: each thread
  loads *one* element of ``a`` and one of ``b`` into shared tiles, the block
  waits (``cuda.syncthreads()``), every thread does TILE multiply-adds from the
  tiles, and the block waits again before the next tiles overwrite these. That
  is 2 ceil(k / TILE) global loads per output, TILE times fewer.

Both put columns j on the x axis, so a warp reads neighbouring elements of a
row of ``b`` and writes neighbouring elements of ``c``; threads past the edge
of ``c`` (sizes that are no multiple of TILE) load zeros into the tiles and
still reach every barrier.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

import numpy as np
from numba import cuda, float32, float64

from demos.patterns.simulator import python_function

__all__ = [
    "METHODS",
    "TILE",
    "global_loads_per_output",
    "launch_config",
    "matmul",
    "naive_matmul_kernel",
    "tile_of",
    "tiled_matmul_kernel",
]

TILE = 16  # edge of the square tiles: blocks of TILE x TILE = 256 threads
METHODS = ("naive", "tiled")


def _scalar(dtype_name: str):
    if np.dtype(dtype_name) not in (np.float32, np.float64):
        raise TypeError(f"matrices must be float32 or float64, got {dtype_name}")
    return float64 if np.dtype(dtype_name) == np.float64 else float32


@functools.cache
def naive_matmul_kernel(dtype_name: str = "float32"):
    """One thread per output, every operand read from global memory."""
    scalar = _scalar(dtype_name)

    @cuda.jit
    def kernel(a, b, c):
        j, i = cuda.grid(2)  # columns on x
        if i < c.shape[0] and j < c.shape[1]:
            acc = scalar(0)
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc

    return kernel


@functools.cache
def tiled_matmul_kernel(tile: int = TILE, dtype_name: str = "float32"):
    """Blocks of *tile* x *tile* threads staging tiles of ``a`` and ``b`` in shared memory."""
    scalar = _scalar(dtype_name)
    if not 1 <= tile <= 32:
        raise ValueError(f"tile must be 1 to 32 (at most 1,024 threads per block), got {tile}")

    @cuda.jit
    def kernel(a, b, c):
        a_tile = cuda.shared.array((tile, tile), scalar)
        b_tile = cuda.shared.array((tile, tile), scalar)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        i = cuda.blockIdx.y * tile + ty
        j = cuda.blockIdx.x * tile + tx
        n, inner = a.shape
        m = b.shape[1]
        acc = scalar(0)
        for start in range(0, inner, tile):
            # one element each; zeros past the edge keep the full-tile loop below right
            a_tile[ty, tx] = a[i, start + tx] if i < n and start + tx < inner else scalar(0)
            b_tile[ty, tx] = b[start + ty, j] if start + ty < inner and j < m else scalar(0)
            cuda.syncthreads()  # the tiles are complete
            for k in range(tile):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()  # everyone is done with them: the next step may overwrite
        if i < n and j < m:
            c[i, j] = acc

    return kernel


def launch_config(n: int, m: int, tile: int = TILE) -> tuple[tuple[int, int], tuple[int, int]]:
    """(grid, block) for an n x m output: blocks of tile x tile threads, columns on x."""
    if n < 1 or m < 1 or tile < 1:
        raise ValueError(f"need n, m and tile of at least 1, got {n}, {m}, {tile}")
    return (math.ceil(m / tile), math.ceil(n / tile)), (tile, tile)


def global_loads_per_output(inner: int, method: str, tile: int = TILE) -> int:
    """Elements of ``a`` and ``b`` one output's thread reads from global memory (k = *inner*)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    return 2 * inner if method == "naive" else 2 * math.ceil(inner / tile)


def tile_of(kernel: Any, default: int = TILE) -> int:
    """The tile edge a kernel was written for: the ``TILE`` (or ``tile``) it reads, else *default*.

    Shared arrays need their size when the kernel is compiled, so a tiled
    kernel names its tile as a global or enclosing constant; the launch must
    use blocks of that many threads per side.
    """
    names = inspect.getclosurevars(python_function(kernel))
    for scope in (names.nonlocals, names.globals):
        for name in ("TILE", "tile"):
            value = scope.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 32:
                return value
    return default


def matmul(a: Any, b: Any, method: str = "tiled", tile: int = TILE) -> Any:
    """``a @ b`` with one of the kernels: NumPy in, NumPy out; device arrays in, device array out.

    Nothing is synchronised for device arrays: time the kernel with CUDA events
    (:mod:`demos.patterns.matmul_bench` does).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if getattr(a, "ndim", None) != 2 or getattr(b, "ndim", None) != 2:
        raise ValueError("a and b must be 2-D matrices")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {a.shape[0]} x {a.shape[1]} but b has {b.shape[0]} rows")
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        raise TypeError(f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
    name = np.dtype(a.dtype).name
    n, m = a.shape[0], b.shape[1]
    on_host = isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    c = np.empty((n, m), a.dtype) if on_host else cuda.device_array((n, m), a.dtype)
    kernel = naive_matmul_kernel(name) if method == "naive" else tiled_matmul_kernel(tile, name)
    grid, block = launch_config(n, m, tile)
    kernel[grid, block](a, b, c)
    return c
