"""Chapter 4's teaching kernels: the distance matrix from naive to tiled and symmetric.

Each kernel fixes what made the previous one slow; the notebook prints their
source, so they are written to be read. All compute D[i, j] = sum_k
(x[i, k] - y[j, k])**2 for x of shape (n, d) and y of shape (m, d), in the
input dtype, through one device function (:func:`squared_distance`).

``naive``
    The original course kernel: one thread per entry, launched as a grid of
    n x m blocks of *one* thread each. A warp has 32 lanes but only one is used,
    so 31/32 of the GPU idles, and every block costs a scheduling slot.
``coalesced``
    2-D blocks of 32 x 8 threads. The fast-varying thread index (x) runs over
    the column j, so the 32 threads of a warp write 32 consecutive floats: one
    128-byte transaction instead of 32 scattered ones. Putting the *row* on x
    makes every store of a warp hit a different row.
``tiled``
    Like "coalesced", but each block first copies its 16 rows of x and 16 rows
    of y into shared memory, so each coordinate is read from global memory once
    per block instead of once per thread. Matters for large d; for d = 3 the
    loads are few and cached anyway, and the barriers plus 16-wide rows (each
    warp's stores span two rows) make it slower than "coalesced".
``symmetric``
    For a single point set D is symmetric: compute only tiles on or above the
    diagonal and mirror them through a shared-memory transpose (so the mirrored
    writes are coalesced too). This halves the *arithmetic* but not the
    *writes*: all n*n entries must still be stored, so for d = 3 (write bound)
    it gains little; it pays off when d is large.

The tuned kernels for the write-bound case are in :mod:`demos.distance.cuda_tuned`;
:mod:`demos.distance.numba_cuda` chooses and launches them.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, types

TILE = 16  # tiled kernel: 16 x 16 output tile per block
SYM_TILE = 32  # symmetric kernel: 32 x 32 output tile per block of 32 x 8 threads
SYM_ROWS = 8  # threads along y in a symmetric block: each covers SYM_TILE // SYM_ROWS rows
# Padded row lengths of the shared tiles (+1 avoids bank conflicts). Spelled out as
# globals because cuda.shared.array needs literal shapes and TILE + 1 inside a
# kernel is an ordinary (non-literal) integer to Numba's type inference.
TILE_PAD = TILE + 1
SYM_TILE_PAD = SYM_TILE + 1


def numba_float(dtype: np.dtype) -> types.Float:
    """The Numba scalar type of a float32/float64 NumPy dtype (for compile-time arrays)."""
    return types.float32 if np.dtype(dtype) == np.float32 else types.float64


@cuda.jit(device=True)
def squared_distance(x, i, y, j):
    """sum_k (x[i, k] - y[j, k])**2; starting from the first term keeps the input dtype."""
    diff = x[i, 0] - y[j, 0]
    acc = diff * diff
    for k in range(1, x.shape[1]):
        diff = x[i, k] - y[j, k]
        acc += diff * diff
    return acc


@cuda.jit
def naive_kernel(x, y, out):
    """One thread per entry; meant for the launch [(n, m), (1, 1)]."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = squared_distance(x, i, y, j)


@cuda.jit
def coalesced_kernel(x, y, out):
    """threadIdx.x -> column j (consecutive threads, consecutive addresses)."""
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = squared_distance(x, i, y, j)


@functools.cache
def tiled_kernel_for(dtype: np.dtype):
    """Shared-memory tiles need a compile-time dtype, hence one kernel per dtype."""
    nbtype = numba_float(dtype)

    @cuda.jit
    def tiled_kernel(x, y, out):
        # sx[r, k]: coordinate k of row (block row start + r); padded to TILE + 1
        # so that threads reading sy[tx, k] hit different banks.
        sx = cuda.shared.array((TILE, TILE_PAD), nbtype)
        sy = cuda.shared.array((TILE, TILE_PAD), nbtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        i0 = cuda.blockIdx.y * TILE
        j0 = cuda.blockIdx.x * TILE
        i = i0 + ty
        j = j0 + tx
        n, d = x.shape
        m = y.shape[0]
        acc = nbtype(0)
        for k0 in range(0, d, TILE):
            # each thread loads one coordinate of x and one of y into the tiles
            if i0 + ty < n and k0 + tx < d:
                sx[ty, tx] = x[i0 + ty, k0 + tx]
            if j0 + ty < m and k0 + tx < d:
                sy[ty, tx] = y[j0 + ty, k0 + tx]
            cuda.syncthreads()
            if i < n and j < m:  # threads past the edge only help loading
                for kk in range(min(TILE, d - k0)):
                    diff = sx[ty, kk] - sy[tx, kk]
                    acc += diff * diff
            cuda.syncthreads()
        if i < n and j < m:
            out[i, j] = acc

    return tiled_kernel


@functools.cache
def symmetric_kernel_for(dtype: np.dtype):
    """Upper-triangle tiles only; each tile is written twice (as is and transposed)."""
    nbtype = numba_float(dtype)
    rows_per_thread = SYM_TILE // SYM_ROWS  # blocks of 32 x 8 threads, 4 rows each

    @cuda.jit
    def symmetric_kernel(x, out):
        tile = cuda.shared.array((SYM_TILE, SYM_TILE_PAD), nbtype)  # +1: no bank conflicts
        bi = cuda.blockIdx.y
        bj = cuda.blockIdx.x
        if bi > bj:  # below the diagonal: the mirror of tile (bj, bi) covers it
            return
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n = x.shape[0]
        i0 = bi * SYM_TILE
        j0 = bj * SYM_TILE
        j = j0 + tx
        for r in range(rows_per_thread):
            li = ty + SYM_ROWS * r
            i = i0 + li
            if i < n and j < n:
                acc = squared_distance(x, i, x, j)
                tile[li, tx] = acc
                out[i, j] = acc
        if bi == bj:
            return
        cuda.syncthreads()
        # mirrored tile: out[j0 + li, i0 + tx] = tile[tx, li];
        # consecutive tx -> consecutive addresses, so these stores are coalesced too
        for r in range(rows_per_thread):
            li = ty + SYM_ROWS * r
            if j0 + li < n and i0 + tx < n:
                out[j0 + li, i0 + tx] = tile[tx, li]

    return symmetric_kernel
