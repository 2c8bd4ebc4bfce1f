"""Squared Euclidean distance matrix as Numba CUDA kernels, from naive to fast.

Chapter 4 walks through these kernels in order; each one fixes what made the
previous one slow. All compute D[i, j] = sum_k (x[i, k] - y[j, k])**2 for
x of shape (n, d) and y of shape (m, d), in the input dtype.

``"naive"``
    The original course kernel: one thread per entry, launched as a grid of
    n x m blocks of *one* thread each. A warp has 32 lanes but only one is used,
    so 31/32 of the GPU idles, and every block costs a scheduling slot.
``"coalesced"``
    2-D blocks of 32 x 8 threads. The fast-varying thread index (x) runs over
    the column j, so the 32 threads of a warp write 32 consecutive floats: one
    128-byte transaction instead of 32 scattered ones. Putting the *row* on x
    (the seed code's mistake) makes every store of a warp hit a different row.
``"tiled"``
    Like "coalesced", but each block first copies its 16 rows of x and 16 rows
    of y into shared memory (cuda.shared.array), so each coordinate is read from
    global memory once per block instead of once per thread. Matters for large d;
    for d = 3 the loads are few and cached anyway, and the barriers plus 16-wide
    rows (each warp's stores span two rows) make it slower than "coalesced".
``"symmetric"``
    For a single point set D is symmetric: compute only tiles on or above the
    diagonal and mirror them through a shared-memory transpose (so the mirrored
    writes are coalesced too). This halves the *arithmetic* but not the *writes*:
    all n*n entries must still be stored. For d = 3 the kernel is bound by the
    write bandwidth, so it gains little; it pays off when d is large (compute
    bound). With a different ``other`` the matrix is not symmetric and this
    kernel falls back to "tiled".
``"rows"``
    Tuned for the write-bound case (small d, e.g. n = 32,768, d = 3 float32,
    4.3 GB of output): one column per thread, y[j] in registers, many rows per
    thread. See :func:`_make_rows_kernel` for why it is fast. Best for float64.
``"pairs"``
    "rows" with two adjacent columns per thread, stored together as one 8-byte
    value (the float32 output viewed as complex64): half the store instructions.
``"quads"``
    Four adjacent float32 columns per thread, one 16-byte store (bit-packed into
    a complex128). Fewest store instructions per byte: the ``"best"`` kernel for
    float32; ``"best"`` picks per dtype (:data:`BEST_BY_DTYPE`).

Why the store width matters: with d = 3 a thread does ~9 flops per 4 bytes it
writes, so the kernel is a stream of stores, and the memory system reaches its
bandwidth only with enough bytes in flight per instruction issued. Measured on an
H200 (n = 32,768, float32, d = 3, 4.29 GB written; ``cudaMemset`` of the same
bytes: 0.93 ms = 4.6 TB/s), time per launch, back to back: naive 646 ms,
coalesced 6.7 ms, tiled 10.2 ms, symmetric 4.0 ms, rows 1.9 ms, pairs 1.20 ms,
quads 1.13 ms (3.8 TB/s, 1.2x the memset floor).

Host API: :func:`distance_matrix` (NumPy in, NumPy out). Device API:
:func:`distance_matrix_device` takes and returns device arrays (Numba device
arrays or anything with ``__cuda_array_interface__``, e.g. CuPy) and neither
synchronises nor copies, so a benchmark can time the kernel alone.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda, types

from demos import hardware
from demos.validation import check_output, check_points

__all__ = [
    "KERNELS",
    "BEST",
    "distance_matrix",
    "distance_matrix_device",
    "launch_config",
    "naive_kernel",
]

KERNELS = ("naive", "coalesced", "tiled", "symmetric", "rows", "pairs", "quads")
# "best" per dtype, from the H200 sweep (tools/device/numba_kernels.sh): 16-byte
# stores of four float32 win for float32; for float64 the plain 8-byte stores of
# "rows" win (16-byte pairs of float64 measured slower there).
BEST_BY_DTYPE = {"float32": "quads", "float64": "rows"}
BEST = BEST_BY_DTYPE["float32"]  # the course's target case: n = 32,768, d = 3, float32

# "rows"/"pairs" tuning (chosen by the same sweep).
ROWS_BLOCK = 128  # threads per block, all along the columns
ROWS_PER_THREAD = 16  # rows each "rows" thread computes for its column
PAIRS_ROWS_PER_THREAD = 32  # rows per thread of "pairs" and "quads" (16..128 are within 5%)
ROWS_MAX_D = 16  # above this, y[j] would not fit in registers: use "tiled"

TILE = 16  # tiled kernel: 16 x 16 output tile per block
SYM_TILE = 32  # symmetric kernel: 32 x 32 output tile per block of 32 x 8 threads
# Padded row lengths of the shared tiles (+1 avoids bank conflicts). Spelled out as
# globals because cuda.shared.array needs literal shapes and TILE + 1 inside a
# kernel is an ordinary (non-literal) integer to Numba's type inference.
TILE_PAD = TILE + 1
SYM_TILE_PAD = SYM_TILE + 1
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y (and z)


# --------------------------------------------------------------------- naive
@cuda.jit
def naive_kernel(x, y, out):
    """One thread per entry; meant for the launch [(n, m), (1, 1)]."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        diff = x[i, 0] - y[j, 0]
        acc = diff * diff  # starting from the first term keeps the input dtype
        for k in range(1, x.shape[1]):
            diff = x[i, k] - y[j, k]
            acc += diff * diff
        out[i, j] = acc


# ----------------------------------------------------------------- coalesced
@cuda.jit
def coalesced_kernel(x, y, out):
    """threadIdx.x -> column j (consecutive threads, consecutive addresses)."""
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        diff = x[i, 0] - y[j, 0]
        acc = diff * diff
        for k in range(1, x.shape[1]):
            diff = x[i, k] - y[j, k]
            acc += diff * diff
        out[i, j] = acc


# --------------------------------------------------------------------- tiled
@functools.lru_cache(maxsize=None)
def _make_tiled_kernel(dtype: np.dtype):
    """Shared-memory tiles need a compile-time dtype, hence one kernel per dtype."""
    nbtype = types.float32 if dtype == np.float32 else types.float64

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


# ----------------------------------------------------------------- symmetric
@functools.lru_cache(maxsize=None)
def _make_symmetric_kernel(dtype: np.dtype):
    """Upper-triangle tiles only; each tile is written twice (as is and transposed)."""
    nbtype = types.float32 if dtype == np.float32 else types.float64
    rows_per_thread = SYM_TILE // 8  # blocks of 32 x 8 threads, 4 rows each

    @cuda.jit
    def symmetric_kernel(x, out):
        tile = cuda.shared.array((SYM_TILE, SYM_TILE_PAD), nbtype)  # +1: no bank conflicts
        bi = cuda.blockIdx.y
        bj = cuda.blockIdx.x
        if bi > bj:  # below the diagonal: the mirror of tile (bj, bi) covers it
            return
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        n, d = x.shape
        i0 = bi * SYM_TILE
        j0 = bj * SYM_TILE
        j = j0 + tx
        for r in range(rows_per_thread):
            li = ty + 8 * r
            i = i0 + li
            if i < n and j < n:
                diff = x[i, 0] - x[j, 0]
                acc = diff * diff
                for k in range(1, d):
                    diff = x[i, k] - x[j, k]
                    acc += diff * diff
                tile[li, tx] = acc
                out[i, j] = acc
        if bi == bj:
            return
        cuda.syncthreads()
        # mirrored tile: out[j0 + li, i0 + tx] = tile[tx, li];
        # consecutive tx -> consecutive addresses, so these stores are coalesced too
        for r in range(rows_per_thread):
            li = ty + 8 * r
            if j0 + li < n and i0 + tx < n:
                out[j0 + li, i0 + tx] = tile[tx, li]

    return symmetric_kernel


# ---------------------------------------------------------------------- rows
# Device functions shared by the full-chunk and tail loops of "rows" and "pairs";
# NVVM inlines them, so the unrolled full-chunk loop keeps its constant trip count.
@cuda.jit(device=True)
def _distance_to(x, i, yj):
    """Squared distance from point x[i] to the point held in the local array *yj*."""
    diff = x[i, 0] - yj[0]
    acc = diff * diff
    for k in range(1, yj.shape[0]):
        diff = x[i, k] - yj[k]
        acc += diff * diff
    return acc


@cuda.jit(device=True)
def _distances_to_pair(x, i, ya, yb):
    """Squared distances from x[i] to the two points held in *ya* and *yb* (x[i] read once)."""
    xi = x[i, 0]
    da = xi - ya[0]
    db = xi - yb[0]
    a = da * da
    b = db * db
    for k in range(1, ya.shape[0]):
        xi = x[i, k]
        da = xi - ya[k]
        db = xi - yb[k]
        a += da * da
        b += db * db
    return a, b


@functools.lru_cache(maxsize=None)
def _make_rows_kernel(dtype: np.dtype, d: int, rows_per_thread: int):
    """The write-bound kernel, compiled for a fixed number of coordinates *d*.

    Why it is fast when the output dominates (d small, 4 bytes written per 3 FMAs):

    * Each thread owns one column j and keeps y[j, :] in registers (a local
      array of compile-time size *d*, fully unrolled, so no local memory). It
      then walks ``rows_per_thread`` rows: every output costs d subtractions,
      d multiply-adds and one store, with no index recomputation besides one
      add of the row stride. Several independent stores in flight per thread
      (instruction-level parallelism) keep the memory system busy.
    * Threads of a warp share the row, so x[i, :] is one broadcast load (L1),
      and the 32 lanes write 128 contiguous bytes: fully coalesced stores.
    * Blocks are 1-D along the columns (no idle threads for m >= block), and the
      rows are covered by a grid-stride loop so that any n fits in gridDim.y.
    """
    rpt = rows_per_thread
    nbtype = types.float32 if dtype == np.float32 else types.float64

    @cuda.jit
    def rows_kernel(x, y, out):
        n = out.shape[0]
        m = out.shape[1]
        j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if j >= m:
            return
        yj = cuda.local.array(d, nbtype)
        for k in range(d):
            yj[k] = y[j, k]
        for i0 in range(cuda.blockIdx.y * rpt, n, cuda.gridDim.y * rpt):
            if i0 + rpt <= n:  # full chunk: no per-row bounds test, loop unrolled
                for r in range(rpt):
                    out[i0 + r, j] = _distance_to(x, i0 + r, yj)
            else:
                for i in range(i0, n):
                    out[i, j] = _distance_to(x, i, yj)

    return rows_kernel


# --------------------------------------------------------------------- pairs
@functools.lru_cache(maxsize=None)
def _make_pairs_kernel(dtype: np.dtype, d: int, rows_per_thread: int):
    """Like "rows", but each thread owns two adjacent columns and stores both at once.

    The output is viewed as complex numbers (complex64 = two float32, complex128 =
    two float64), so the pair (D[i, 2c], D[i, 2c + 1]) is one 8- or 16-byte store:
    half as many store instructions for the same bytes, which matters when the
    kernel issues nothing but stores. Needs an even number of columns.
    """
    rpt = rows_per_thread
    nbtype = types.float32 if dtype == np.float32 else types.float64

    @cuda.jit
    def pairs_kernel(x, y, out2):
        n = out2.shape[0]
        half = out2.shape[1]
        c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if c >= half:
            return
        ya = cuda.local.array(d, nbtype)
        yb = cuda.local.array(d, nbtype)
        for k in range(d):
            ya[k] = y[2 * c, k]
            yb[k] = y[2 * c + 1, k]
        for i0 in range(cuda.blockIdx.y * rpt, n, cuda.gridDim.y * rpt):
            if i0 + rpt <= n:  # full chunk: constant trip count, so it unrolls
                for r in range(rpt):
                    a, b = _distances_to_pair(x, i0 + r, ya, yb)
                    out2[i0 + r, c] = complex(a, b)
            else:
                for i in range(i0, n):
                    a, b = _distances_to_pair(x, i, ya, yb)
                    out2[i, c] = complex(a, b)

    return pairs_kernel


# --------------------------------------------------------------------- quads
@functools.lru_cache(maxsize=None)
def _make_quads_kernel(d: int, rows_per_thread: int):
    """float32 only: four adjacent columns per thread, stored as one 16-byte value.

    Numba has no float4 type, so the four results are packed bit for bit into
    two float64 (libdevice ``float_as_int`` / ``hiloint2double``, plain register
    moves) and stored as one complex128 into the output viewed as (n, m/4)
    complex128. Needs m divisible by 4, a 16-byte aligned output and a real GPU
    (the simulator lacks the bit casts); otherwise "pairs" runs instead.
    """
    rpt = rows_per_thread
    from numba.cuda import libdevice as lib

    @cuda.jit
    def quads_kernel(x, y, out4):
        n = out4.shape[0]
        quarter = out4.shape[1]
        c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if c >= quarter:
            return
        yc = cuda.local.array((4, d), types.float32)
        for q in range(4):
            for k in range(d):
                yc[q, k] = y[4 * c + q, k]
        for i0 in range(cuda.blockIdx.y * rpt, n, cuda.gridDim.y * rpt):
            for r in range(min(rpt, n - i0)):
                i = i0 + r
                xi = x[i, 0]
                t0 = xi - yc[0, 0]
                t1 = xi - yc[1, 0]
                t2 = xi - yc[2, 0]
                t3 = xi - yc[3, 0]
                a0 = t0 * t0
                a1 = t1 * t1
                a2 = t2 * t2
                a3 = t3 * t3
                for k in range(1, d):
                    xi = x[i, k]
                    t0 = xi - yc[0, k]
                    t1 = xi - yc[1, k]
                    t2 = xi - yc[2, k]
                    t3 = xi - yc[3, k]
                    a0 += t0 * t0
                    a1 += t1 * t1
                    a2 += t2 * t2
                    a3 += t3 * t3
                lo = lib.hiloint2double(lib.float_as_int(a1), lib.float_as_int(a0))
                hi = lib.hiloint2double(lib.float_as_int(a3), lib.float_as_int(a2))
                out4[i, c] = complex(lo, hi)

    return quads_kernel


def _quad_view(out: Any, dtype: np.dtype) -> Any:
    """float32 *out* seen as (n, m/4) complex128, or None where that is impossible.

    Also None in the CUDA simulator, which does not implement the libdevice bit casts.
    """
    if dtype != np.float32 or hardware.simulator_enabled():
        return None
    view = _as_numba(out)
    if _pointer(view) % 16 or view.shape[1] % 4:
        return None
    try:
        return view.view(np.complex128)
    except ValueError:
        return None


# ---------------------------------------------------------------- launching
def best_kernel(dtype: Any = np.float32) -> str:
    """The fastest kernel for *dtype* on the H200 sweep (tools/device/numba_kernels.sh)."""
    return BEST_BY_DTYPE[np.dtype(dtype).name]


def _resolve(kernel: str, d: int, dtype: Any) -> str:
    if kernel == "best":
        kernel = best_kernel(dtype)
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS + ('best',)}")
    if kernel in ("rows", "pairs", "quads") and d > ROWS_MAX_D:
        kernel = "tiled"  # y[j] would spill out of registers; shared tiles do better
    return kernel


def launch_config(
    kernel: str,
    n: int,
    m: int,
    block: tuple[int, ...] | int | None = None,
    *,
    dtype: Any = np.float32,
    rows_per_thread: int | None = None,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(grid, block) for *kernel* on an n x m output.

    *block* overrides the default block shape where the kernel allows it
    ("coalesced": any (bx, by); "rows"/"pairs": threads per block). The tiled
    and symmetric kernels have their tile sizes compiled in, and "naive" always
    uses one thread per block, as in the original course. *dtype* only matters
    for "best", which picks a kernel per dtype.
    """
    if kernel == "best":
        kernel = best_kernel(dtype)
    if kernel == "naive":
        if block not in (None, (1, 1), 1):
            raise ValueError("the naive kernel is always launched with blocks of one thread")
        return (n, m), (1, 1)
    if kernel == "coalesced":
        bx, by = (32, 8) if block is None else tuple(block)
        return (math.ceil(m / bx), math.ceil(n / by)), (bx, by)
    if kernel == "tiled":
        _fixed_block(kernel, block, (TILE, TILE))
        return (math.ceil(m / TILE), math.ceil(n / TILE)), (TILE, TILE)
    if kernel == "symmetric":
        _fixed_block(kernel, block, (SYM_TILE, 8))
        tiles = math.ceil(n / SYM_TILE)
        return (tiles, tiles), (SYM_TILE, 8)
    if kernel in ("rows", "pairs", "quads"):
        threads = ROWS_BLOCK if block is None else int(np.prod(block))
        rpt = rows_per_thread or (ROWS_PER_THREAD if kernel == "rows" else PAIRS_ROWS_PER_THREAD)
        if rpt < 1 or threads < 1:
            raise ValueError(f"rows_per_thread and block must be >= 1, got {rpt} and {block}")
        columns = {"rows": m, "pairs": m // 2, "quads": m // 4}[kernel]
        return (math.ceil(columns / threads), min(math.ceil(n / rpt), MAX_GRID_Y)), (threads,)
    raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS + ('best',)}")


def _fixed_block(kernel: str, block: Any, fixed: tuple[int, int]) -> None:
    if block is not None and tuple(np.atleast_1d(block)) != fixed:
        raise ValueError(
            f"the {kernel} kernel has its block shape {fixed} compiled in, got {block}"
        )


def distance_matrix_device(
    d_points: Any,
    d_other: Any = None,
    kernel: str = "best",
    out: Any = None,
    block: tuple[int, ...] | int | None = None,
    rows_per_thread: int | None = None,
) -> Any:
    """Launch *kernel* on device arrays and return the device output, asynchronously.

    Inputs are Numba device arrays or any ``__cuda_array_interface__`` array
    (CuPy). *out* (shape (n, m), input dtype) is reused when given, else
    allocated with Numba. Nothing is synchronised or copied back: time it with
    CUDA events, or call ``numba.cuda.synchronize()`` before reading the result.
    *block* and *rows_per_thread* override the tuning (for sweeps).
    """
    # allow_nonfinite: a NaN scan of a CuPy array would synchronise the device.
    check_points(d_points, name="d_points", allow_nonfinite=True)
    x = d_points if _is_device_array(d_points) else _not_device(d_points, "d_points")
    if d_other is None:
        y = x
    else:
        check_points(d_other, name="d_other", allow_nonfinite=True)
        y = d_other if _is_device_array(d_other) else _not_device(d_other, "d_other")
    dtype = np.dtype(x.dtype)
    if np.dtype(y.dtype) != dtype:
        raise TypeError(
            f"points and other must have the same dtype, got {dtype} and {np.dtype(y.dtype)}"
        )
    n, d = x.shape
    m, d_y = y.shape
    if d_y != d:
        raise ValueError(
            f"points and other must have the same number of coordinates, got {d} and {d_y}"
        )
    if out is None:
        out = cuda.device_array((n, m), dtype=dtype)
    else:
        check_output(out, n, m, dtype, name="out")
        if not _is_device_array(out):
            _not_device(out, "out")
    name = _resolve(kernel, d, dtype)
    if name == "symmetric" and d_other is not None and d_other is not d_points:
        name = "tiled"  # a rectangular/other matrix has no symmetry to exploit
    packed = _quad_view(out, dtype) if name == "quads" else None
    if name == "quads" and packed is None:
        name = "pairs"  # float64, m not divisible by 4, or a misaligned out
    if name == "pairs":
        packed = _pair_view(out, dtype)
        if packed is None:
            name = "rows"  # odd number of columns or a strided out: no pairs to store
    grid, blk = launch_config(name, n, m, block, dtype=dtype, rows_per_thread=rows_per_thread)
    if name == "naive":
        naive_kernel[grid, blk](x, y, out)
    elif name == "coalesced":
        coalesced_kernel[grid, blk](x, y, out)
    elif name == "tiled":
        _make_tiled_kernel(dtype)[grid, blk](x, y, out)
    elif name == "symmetric":
        _make_symmetric_kernel(dtype)[grid, blk](x, out)
    else:
        rpt = rows_per_thread or (ROWS_PER_THREAD if name == "rows" else PAIRS_ROWS_PER_THREAD)
        if name == "quads":
            _make_quads_kernel(d, int(rpt))[grid, blk](x, y, packed)
        elif name == "pairs":
            _make_pairs_kernel(dtype, d, int(rpt))[grid, blk](x, y, packed)
        else:
            _make_rows_kernel(dtype, d, int(rpt))[grid, blk](x, y, out)
    return out


def _as_numba(array: Any) -> Any:
    """A Numba view of a device array (CuPy arrays are wrapped without a copy)."""
    if hasattr(array, "copy_to_host"):
        return array
    return cuda.as_cuda_array(array)


def _pair_view(out: Any, dtype: np.dtype) -> Any:
    """*out* seen as (n, m/2) complex pairs, or None where that is impossible."""
    pair_dtype = np.dtype(np.complex64 if dtype == np.float32 else np.complex128)
    view = _as_numba(out)
    if _pointer(view) % pair_dtype.itemsize:
        return None  # e.g. a slice starting at an odd column: wide stores would fault
    try:
        return view.view(pair_dtype)
    except ValueError:  # odd number of columns, or not C-contiguous
        return None


def _pointer(array: Any) -> int:
    """Device address of *array*'s first element (0 where unknown, e.g. the simulator)."""
    interface = getattr(array, "__cuda_array_interface__", None)
    return interface["data"][0] if interface else 0


def _is_device_array(array: Any) -> bool:
    """Numba device arrays (real or simulated) and CUDA-array-interface arrays (CuPy)."""
    if isinstance(array, np.ndarray):
        return False
    return hasattr(array, "__cuda_array_interface__") or hasattr(array, "copy_to_host")


def _not_device(array: Any, name: str):
    raise TypeError(
        f"{name} must be a GPU array (Numba device array or CuPy), got {type(array).__name__}; "
        "use distance_matrix() for NumPy arrays"
    )


def distance_matrix(
    points: np.ndarray,
    other: np.ndarray | None = None,
    kernel: str = "best",
    block: tuple[int, ...] | int | None = None,
) -> np.ndarray:
    """Host in, host out: copy to the GPU, run *kernel*, copy the matrix back.

    Raises :class:`demos.hardware.GPUUnavailableError` when there is no GPU and
    the CUDA simulator is off (``NUMBA_ENABLE_CUDASIM=1`` runs it on the CPU).
    """
    if not hardware.simulator_enabled():
        hardware.require_gpu("The Numba CUDA distance matrix")
    x = check_points(points, name="points")
    y = None if other is None else check_points(other, name="other")
    if not isinstance(x, np.ndarray) or (y is not None and not isinstance(y, np.ndarray)):
        raise TypeError(
            "distance_matrix takes NumPy arrays; use distance_matrix_device for GPU arrays"
        )
    d_x = cuda.to_device(np.ascontiguousarray(x))
    d_y = None if y is None else cuda.to_device(np.ascontiguousarray(y))
    d_out = distance_matrix_device(d_x, d_y, kernel=kernel, block=block)
    return d_out.copy_to_host()
