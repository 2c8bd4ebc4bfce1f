"""Histogram and sum kernels, from the wrong one to the fast one (chapter 4b).

Each kernel fixes what made the previous one wrong or slow:

* :data:`histogram_racy` adds with ``bins[v] += 1``: a read, an add and a write
  that other threads interleave with, so counts get lost on a GPU.
* :data:`histogram_global_atomic` uses ``cuda.atomic.add`` on the global bins:
  correct, but every element is an atomic on one of few addresses, and the
  atomics on a popular bin are serialised.
* :func:`histogram_shared_kernel` gives every block a private histogram in
  shared memory (atomics there are cheap and contended only within the block),
  then adds it to the global bins with one atomic per bin per block.
* :func:`tree_sum_kernel` sums in shared memory, halving the active threads per
  step; one partial sum per block.
* :func:`warp_sum_kernel` does the last steps inside each warp with
  ``cuda.shfl_down_sync`` (registers, no shared memory, no barrier).

All kernels use grid-stride loops, so any launch covers any input: the grid
can be sized to the GPU (a few blocks per multiprocessor) rather than the data.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda, float32, float64, int32

from demos.patterns.warp_reduce import warp_reduce_sum

__all__ = [
    "BLOCK",
    "histogram",
    "histogram_global_atomic",
    "histogram_racy",
    "histogram_shared_kernel",
    "launch_config",
    "reduce_sum",
    "tree_sum_kernel",
    "warp_sum_kernel",
]

BLOCK = 256  # threads per block of the sum kernels (a power of two, a multiple of 32)
HISTOGRAM_METHODS = ("racy", "global_atomic", "shared")
SUM_METHODS = ("tree", "warp")


@cuda.jit
def histogram_racy(values, bins):
    """Wrong on purpose: ``+=`` on global memory is not atomic."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, values.shape[0], stride):
        bins[values[i]] += 1


@cuda.jit
def histogram_global_atomic(values, bins):
    """Correct: one global atomic per element."""
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, values.shape[0], stride):
        cuda.atomic.add(bins, values[i], 1)


@functools.cache
def histogram_shared_kernel(n_bins: int):
    """The privatised histogram for *n_bins* bins (shared arrays need a size known at compile
    time)."""

    @cuda.jit
    def kernel(values, bins):
        local = cuda.shared.array(n_bins, int32)
        t = cuda.threadIdx.x
        for b in range(t, n_bins, cuda.blockDim.x):
            local[b] = 0
        cuda.syncthreads()
        start, stride = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, values.shape[0], stride):
            cuda.atomic.add(local, values[i], 1)
        cuda.syncthreads()
        for b in range(t, n_bins, cuda.blockDim.x):
            if local[b] != 0:
                cuda.atomic.add(bins, b, local[b])

    return kernel


def _accumulator(dtype: np.dtype):
    return float64 if np.dtype(dtype) == np.float64 else float32


@functools.cache
def tree_sum_kernel(dtype_name: str = "float32"):
    """One partial sum per block: a grid-stride sum per thread, then a tree in shared memory."""
    acc_type = _accumulator(np.dtype(dtype_name))

    @cuda.jit
    def kernel(values, partial):
        shared = cuda.shared.array(BLOCK, acc_type)
        t = cuda.threadIdx.x
        acc = acc_type(0)
        start, stride = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, values.shape[0], stride):
            acc += values[i]
        shared[t] = acc
        cuda.syncthreads()
        step = BLOCK // 2
        while step > 0:
            if t < step:
                shared[t] += shared[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            partial[cuda.blockIdx.x] = shared[0]

    return kernel


@functools.cache
def warp_sum_kernel(dtype_name: str = "float32"):
    """Like :func:`tree_sum_kernel`, but warps add among themselves with shuffles.

    Each warp reduces its 32 values in registers (5 shuffles), lane 0 of each
    warp writes one value to shared memory, and the first warp reduces those.
    """
    acc_type = _accumulator(np.dtype(dtype_name))
    warps = BLOCK // 32

    @cuda.jit
    def kernel(values, partial):
        shared = cuda.shared.array(warps, acc_type)
        t = cuda.threadIdx.x
        lane, warp = t % 32, t // 32
        acc = acc_type(0)
        start, stride = cuda.grid(1), cuda.gridsize(1)
        for i in range(start, values.shape[0], stride):
            acc += values[i]
        acc = warp_reduce_sum(acc)  # the warp's sum, in lane 0
        if lane == 0:
            shared[warp] = acc
        cuda.syncthreads()
        if warp == 0:
            acc = shared[lane] if lane < warps else acc_type(0)
            acc = warp_reduce_sum(acc)
            if lane == 0:
                partial[cuda.blockIdx.x] = acc

    return kernel


def launch_config(n: int, max_blocks: int, threads: int = BLOCK) -> tuple[int, int]:
    """(blocks, threads): enough blocks for *n* elements, at most *max_blocks* (grid-stride loops do
    the rest)."""
    if n < 0 or max_blocks < 1 or threads < 1:
        raise ValueError(
            f"need n >= 0, max_blocks >= 1 and threads >= 1, got {n}, {max_blocks}, {threads}"
        )
    return max(1, min(max_blocks, math.ceil(n / threads))), threads


def _check_values(values: Any, integer: bool) -> None:
    if getattr(values, "ndim", None) != 1:
        raise ValueError(f"values must be a 1-D array, got shape {getattr(values, 'shape', None)}")
    kind = np.dtype(values.dtype).kind
    if integer and kind not in "iu":
        raise TypeError(f"histogram values must be integers (bin numbers), got {values.dtype}")
    if not integer and np.dtype(values.dtype) not in (np.float32, np.float64):
        raise TypeError(f"sum values must be float32 or float64, got {values.dtype}")


def histogram(values: Any, n_bins: int, method: str = "shared", max_blocks: int = 1024) -> Any:
    """Counts of each bin number in *values* (integers in [0, n_bins)) with one of the kernels.

    *values* may be a NumPy array (copied to the device and back) or a device
    array (the counts stay on the device, nothing is synchronised). Values
    outside [0, n_bins) are the caller's error: like in CUDA, the kernel does
    not check them.
    """
    if method not in HISTOGRAM_METHODS:
        raise ValueError(f"unknown histogram method {method!r}; choose one of {HISTOGRAM_METHODS}")
    if not 1 <= int(n_bins) <= 12 * 1024:
        raise ValueError(f"n_bins must be between 1 and 12,288 (shared memory), got {n_bins}")
    _check_values(values, integer=True)
    on_host = isinstance(values, np.ndarray)
    bins = np.zeros(int(n_bins), np.int32) if on_host else cuda.device_array(int(n_bins), np.int32)
    if not on_host:
        bins[:] = 0
    blocks, threads = launch_config(values.shape[0], max_blocks)
    kernel = {
        "racy": histogram_racy,
        "global_atomic": histogram_global_atomic,
        "shared": histogram_shared_kernel(int(n_bins)),
    }[method]
    kernel[blocks, threads](values, bins)
    return bins


def reduce_sum(values: Any, method: str = "warp", max_blocks: int = 1024) -> float:
    """The sum of a 1-D float array: one kernel for partial sums, then the few partials on the host.

    Returns a Python float, so it synchronises: time the kernels themselves
    with CUDA events (``demos.patterns.bench`` does).
    """
    if method not in SUM_METHODS:
        raise ValueError(f"unknown sum method {method!r}; choose one of {SUM_METHODS}")
    _check_values(values, integer=False)
    blocks, threads = launch_config(values.shape[0], max_blocks)
    dtype_name = np.dtype(values.dtype).name
    partial = np.zeros(blocks, values.dtype)
    if not isinstance(values, np.ndarray):
        partial = cuda.to_device(partial)
    kernel = tree_sum_kernel(dtype_name) if method == "tree" else warp_sum_kernel(dtype_name)
    kernel[blocks, threads](values, partial)
    host = partial if isinstance(partial, np.ndarray) else partial.copy_to_host()
    return float(host.sum(dtype=np.float64))
