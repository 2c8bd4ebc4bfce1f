"""A 1-D stencil with a halo (chapter 4c): every output is the mean of its 2 RADIUS + 1 neighbours.

``out[i] = mean(x[i - r], ..., x[i + r])`` for ``r <= i < n - r``; the first and
last ``r`` elements have no full neighbourhood and keep their value (a fixed
boundary, as in a heat equation with fixed ends). Two kernels:

* :func:`stencil_global_kernel`: each thread reads its 2 r + 1 inputs from global
  memory, so every input is requested 2 r + 1 times (the caches catch many);
* :func:`stencil_shared_kernel`: a block of ``block`` threads loads its
  ``block`` elements plus ``r`` on each side (the *halo*, loaded by the block's
  first r threads) into shared memory once, waits at a barrier, and reads all
  neighbours from there: each input is read from global memory once by its own
  block and at most once more as a neighbouring block's halo.

One dimension keeps the indexing short; a 2-D stencil has the same halo on four
sides (and corners for a 9-point one).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda, float32

__all__ = [
    "BLOCK",
    "RADIUS",
    "reference",
    "stencil",
    "stencil_global_kernel",
    "stencil_shared_kernel",
]

BLOCK = 256  # threads per block of the course's kernels
RADIUS = 1  # the chapter's three-point stencil


def _check(block: int, radius: int) -> None:
    if not 1 <= block <= 1024:
        raise ValueError(f"block must be 1 to 1,024 threads, not {block}")
    if not 1 <= radius <= block:
        raise ValueError(f"radius must be from 1 to the block size ({block}), not {radius}")


def reference(x: np.ndarray, radius: int = RADIUS) -> np.ndarray:
    """The stencil in NumPy (float64 sums): what every kernel is compared with."""
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a 1-D array")
    if radius < 1:
        raise ValueError(f"radius must be at least 1, not {radius}")
    out = x.astype(np.float64)
    if x.size > 2 * radius:
        sums = np.convolve(x.astype(np.float64), np.ones(2 * radius + 1), mode="valid")
        out[radius : x.size - radius] = sums / (2 * radius + 1)
    return out.astype(x.dtype)


@functools.cache
def stencil_global_kernel(radius: int = RADIUS) -> Any:
    """``kernel[blocks, threads](x, out)``: every neighbour read from global memory."""
    if radius < 1:
        raise ValueError(f"radius must be at least 1, not {radius}")

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        n = x.shape[0]
        if i < n:
            if i < radius or i >= n - radius:
                out[i] = x[i]
            else:
                acc = float32(0)
                for k in range(-radius, radius + 1):
                    acc += x[i + k]
                out[i] = acc / float32(2 * radius + 1)

    return kernel


@functools.cache
def stencil_shared_kernel(block: int = BLOCK, radius: int = RADIUS) -> Any:
    """``kernel[blocks, block](x, out)``: a tile of ``block + 2 radius`` elements in shared
    memory."""
    _check(block, radius)
    size = block + 2 * radius  # one constant: a GPU compiles no sum as an array's size

    @cuda.jit
    def kernel(x, out):
        tile = cuda.shared.array(size, float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * block + t
        n = x.shape[0]
        tile[t + radius] = x[i] if i < n else float32(0)
        if t < radius:  # the halo: radius elements left of the block and radius right of it
            left = i - radius
            tile[t] = x[left] if left >= 0 else float32(0)
            right = i + block
            tile[t + block + radius] = x[right] if right < n else float32(0)
        cuda.syncthreads()  # the tile is complete
        if i < n:
            if i < radius or i >= n - radius:
                out[i] = tile[t + radius]
            else:
                acc = float32(0)
                for k in range(2 * radius + 1):
                    acc += tile[t + k]
                out[i] = acc / float32(2 * radius + 1)

    return kernel


def stencil(x: Any, method: str = "shared", radius: int = RADIUS, block: int = BLOCK) -> Any:
    """The stencil of float32 *x* with one of the kernels: NumPy in, NumPy out; device arrays in,
    a device array out (nothing synchronised)."""
    if method not in ("global", "shared"):
        raise ValueError(f"unknown method {method!r}; choose 'global' or 'shared'")
    if getattr(x, "ndim", None) != 1:
        raise ValueError("x must be a 1-D array")
    if np.dtype(x.dtype) != np.float32:
        raise TypeError(f"x must be float32 (the kernels' tiles are), not {x.dtype}")
    _check(block, radius)
    on_host = isinstance(x, np.ndarray)
    out = np.empty_like(x) if on_host else cuda.device_array(x.shape[0], np.float32)
    kernel = (
        stencil_global_kernel(radius)
        if method == "global"
        else stencil_shared_kernel(block, radius)
    )
    kernel[max(1, math.ceil(x.shape[0] / block)), block](x, out)
    return out
