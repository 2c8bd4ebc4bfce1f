"""Chapter 4's tuned kernels for the write-bound case, and the memory views they store through.

With d = 3 a thread does ~9 flops per 4 bytes it writes, so the kernel is a
stream of stores, and the memory system reaches its bandwidth only with enough
bytes in flight per instruction issued. Measured on an H200 (n = 32,768,
float32, d = 3, 4.29 GB written; ``cudaMemset`` of the same bytes: 0.93 ms =
4.6 TB/s), time per launch, back to back: naive 646 ms, coalesced 6.7 ms, tiled
10.2 ms, symmetric 4.0 ms, rows 2.0 ms, pairs 1.19 ms, quads 1.12 ms (3.8 TB/s,
1.2x the memset floor).

``rows``
    One column per thread, y[j] in registers, many rows per thread (see
    :func:`rows_kernel_for`). The fastest for float64.
``pairs``
    "rows" with two adjacent columns per thread, stored together as one 8- or
    16-byte value: the output is *viewed* as complex numbers (two floats each).
``quads``
    Four adjacent float32 columns per thread, one 16-byte store (bit-packed into
    a complex128 view of the output). The fastest for float32.

The views need an even (pairs) or divisible-by-4 (quads) number of columns and
an output address aligned to the wider element; :func:`widened` says whether a
given output allows them, and :mod:`demos.distance.numba_cuda` falls back to
the narrower kernel, and reports it, where it does not.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
from numba import cuda, types

from demos import hardware
from demos.distance.cuda_teaching import numba_float

ROWS_MAX_D = 16  # above this, y[j] would not fit in registers: the dispatcher uses "tiled"
WIDE_DTYPES = {  # (output dtype, columns per store) -> the dtype of one wide store
    ("float32", 2): np.dtype(np.complex64),
    ("float64", 2): np.dtype(np.complex128),
    ("float32", 4): np.dtype(np.complex128),
}


class Layout(NamedTuple):
    """Where an array lives and how it is laid out: all a launch needs to know about it."""

    pointer: int  # device address of the first element (0 in the simulator: unknown)
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in bytes
    dtype: np.dtype


def layout_of(array: Any) -> Layout:
    """The :class:`Layout` of a CuPy array, a Numba device array or any CUDA-interface array.

    Reads CuPy's and Numba's attributes directly where it can: building the
    ``__cuda_array_interface__`` dictionary costs microseconds per call.
    """
    data = getattr(array, "data", None)
    pointer = getattr(data, "ptr", None)  # CuPy
    if pointer is None:
        pointer = getattr(array, "ptr", None)  # Numba device arrays (not simulated)
    if pointer is None:
        interface = getattr(array, "__cuda_array_interface__", None)
        pointer = interface["data"][0] if interface else 0
    return Layout(int(pointer), tuple(array.shape), tuple(array.strides), np.dtype(array.dtype))


def widened(out: Layout, lanes: int) -> Layout | None:
    """*out* seen with *lanes* adjacent columns per element, or None where that is impossible.

    Possible when the columns are contiguous, their number divides by *lanes*, and
    the start address and row stride are multiples of the wide element's size
    (a misaligned wide store faults on the GPU).
    """
    wide = WIDE_DTYPES.get((out.dtype.name, lanes))
    if wide is None:
        return None
    n, m = out.shape
    row_stride, column_stride = out.strides
    if m % lanes or column_stride != out.dtype.itemsize:
        return None
    if out.pointer % wide.itemsize or (n > 1 and row_stride % wide.itemsize):
        return None
    return Layout(out.pointer, (n, m // lanes), (row_stride, wide.itemsize), wide)


def wide_view(out: Any, lanes: int) -> Any:
    """A Numba array of *out* with *lanes* columns per element (see :func:`widened`)."""
    view = out if hasattr(out, "copy_to_host") else cuda.as_cuda_array(out)
    return view.view(WIDE_DTYPES[(np.dtype(out.dtype).name, lanes)])


if hardware.simulator_enabled():

    @cuda.jit(device=True)
    def _pack_two_float32(a, b):
        """The bits of float32 *a* (low half) and *b* (high half) as one float64 (simulated)."""
        return np.array([a, b], dtype=np.float32).view(np.float64)[0]

else:
    from numba.cuda import libdevice as _lib

    @cuda.jit(device=True)
    def _pack_two_float32(a, b):
        """The bits of float32 *a* (low half) and *b* (high half) as one float64 (no arithmetic)."""
        return _lib.hiloint2double(_lib.float_as_int(b), _lib.float_as_int(a))


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


@functools.cache
def rows_kernel_for(dtype: np.dtype, d: int, rows_per_thread: int):
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
    nbtype = numba_float(dtype)

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


@functools.cache
def pairs_kernel_for(dtype: np.dtype, d: int, rows_per_thread: int):
    """Like "rows", but each thread owns two adjacent columns and stores both at once.

    The output is viewed as complex numbers (complex64 = two float32, complex128 =
    two float64), so the pair (D[i, 2c], D[i, 2c + 1]) is one 8- or 16-byte store:
    half as many store instructions for the same bytes, which matters when the
    kernel issues nothing but stores. Needs an even number of columns.
    """
    rpt = rows_per_thread
    nbtype = numba_float(dtype)

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


@functools.cache
def quads_kernel_for(dtype: np.dtype, d: int, rows_per_thread: int):
    """float32 only: four adjacent columns per thread, stored as one 16-byte value.

    Numba has no float4 type, so the four results are packed bit for bit into
    two float64 (libdevice ``float_as_int`` / ``hiloint2double``, plain register
    moves) and stored as one complex128 into the output viewed as (n, m/4)
    complex128. Needs m divisible by 4 and a 16-byte aligned output (the
    dispatcher checks, and says which kernel runs instead). *dtype* must be float32.
    """
    if np.dtype(dtype) != np.float32:
        raise ValueError("the quads kernel packs four float32 values; it has no float64 version")
    rpt = rows_per_thread

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
                lo = _pack_two_float32(a0, a1)
                hi = _pack_two_float32(a2, a3)
                out4[i, c] = complex(lo, hi)

    return quads_kernel
