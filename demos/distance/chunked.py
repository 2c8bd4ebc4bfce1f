"""The distance matrix block-row by block-row, for matrices larger than GPU memory.

27,000 float64 points make a 5.8 GB matrix; 100,000 points make 80 GB, more than
most GPUs hold. Rows of D are independent, so the GPU can compute a band of
``block_rows`` rows at a time (with :func:`cupy_lean.distance_matrix_device`,
no temporaries) and stream it to host memory, or to a ``np.memmap`` on disk.

Two CUDA streams, each with its own device block and pinned host staging
buffer, keep the GPU busy: while stream A copies block k to the host, stream B
computes block k+1, and the CPU copies block k-1 from pinned staging into
*out*. The copy back is usually the bottleneck (PCIe/C2C bandwidth, not FLOPs),
so the achieved GB/s is compared with the host-device bandwidth in the benchmark.

**Without a GPU** (or CuPy) the same blocking runs with NumPy on the CPU: the
result is identical, and peak memory is one block of temporaries instead of
three full matrices, which makes it a useful memory-bounded CPU version too.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from demos import hardware
from demos.distance import generic
from demos.validation import check_output, check_pair, require_host

N_STREAMS = 2
COPY_THREADS = max(1, min(8, os.cpu_count() or 1))  # host copies staging -> out in parallel
CPU_BLOCK_BYTES = 64 * 2**20  # CPU path: ~64 MB per block of temporaries


def choose_block_rows(m: int, itemsize: int, budget_bytes: float, n_buffers: int) -> int:
    """The most rows (at least 1) such that *n_buffers* (rows, m) blocks fit in *budget_bytes*."""
    return max(1, int(budget_bytes // (n_buffers * m * itemsize)))


def distance_matrix(
    points: np.ndarray,
    other: np.ndarray | None = None,
    out: np.ndarray | None = None,
    block_rows: int | None = None,
    device_memory_fraction: float = 0.5,
    progress: bool = False,
) -> np.ndarray:
    """Squared distances between rows of *points* and *other* (default *points*) into host memory.

    Args:
        points, other: NumPy arrays (n, d) and (m, d), float32 or float64.
        out: host array of shape (n, m) and the input dtype to fill (a ``np.memmap``
            works, for matrices larger than RAM); allocated when None.
        block_rows: rows per block; by default the largest that fits into
            *device_memory_fraction* of the free GPU memory (two blocks in flight).
            Lower the fraction to see the streaming on a GPU with lots of memory.
        progress: show a tqdm progress bar over the blocks.

    Returns *out*. Uses the GPU when CuPy can reach one, else NumPy (same blocks).
    """
    x, y = check_pair(points, other)
    require_host(x, y, out, backend="The chunked distance matrix (it writes to host memory)")
    if not 0 < device_memory_fraction <= 1:
        raise ValueError(f"device_memory_fraction must be in (0, 1], got {device_memory_fraction}")
    if block_rows is not None and int(block_rows) < 1:
        raise ValueError(f"block_rows must be >= 1, got {block_rows}")
    n, m = x.shape[0], y.shape[0]
    if out is None:
        out = np.empty((n, m), dtype=x.dtype)
    else:
        check_output(out, n, m, x.dtype)
    if hardware.cupy_available():
        _fill_gpu(x, y, out, block_rows, device_memory_fraction, progress)
    else:
        _fill_cpu(x, y, out, block_rows, progress)
    return out


def _blocks(n: int, block_rows: int, progress: bool, where: str):
    starts = range(0, n, block_rows)
    if progress:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc=f"distance blocks ({where})", unit="block")
    for start in starts:
        yield start, min(start + block_rows, n)


def _fill_cpu(
    x: np.ndarray, y: np.ndarray, out: np.ndarray, block_rows: int | None, progress: bool
) -> None:
    """NumPy path: same blocking, one block of temporaries at a time."""
    if block_rows is None:
        block_rows = choose_block_rows(y.shape[0], x.itemsize, CPU_BLOCK_BYTES, 3)
    y2 = generic.row_norms(y)
    for start, stop in _blocks(x.shape[0], int(block_rows), progress, "CPU, NumPy"):
        xb = x[start:stop]
        out[start:stop] = generic.combine(generic.row_norms(xb), generic.inner_products(xb, y), y2)


def _fill_gpu(
    x: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
    block_rows: int | None,
    fraction: float,
    progress: bool,
) -> None:
    """GPU path: N_STREAMS streams, each with a device block and a pinned staging block."""
    import cupy as cp
    import cupyx

    from demos.distance.cupy_lean import distance_matrix_device

    n, m = x.shape[0], y.shape[0]
    d_x = cp.asarray(x)
    d_y = d_x if y is x else cp.asarray(y)
    if block_rows is None:
        free, _total = cp.cuda.runtime.memGetInfo()
        block_rows = choose_block_rows(m, x.itemsize, free * fraction, N_STREAMS)
    block_rows = min(int(block_rows), n)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(N_STREAMS)]
    blocks = [cp.empty((block_rows, m), dtype=x.dtype) for _ in range(N_STREAMS)]
    staging = [cupyx.empty_pinned((block_rows, m), dtype=x.dtype) for _ in range(N_STREAMS)]
    pending: list[tuple[int, int] | None] = [None] * N_STREAMS
    cp.cuda.Device().synchronize()  # inputs are on the device before the streams use them
    # One thread copying pinned staging -> *out* (often fresh, page-faulting memory) is
    # slower than the GPU's copy engine; NumPy releases the GIL for copies, so split it.
    copier = ThreadPoolExecutor(COPY_THREADS)

    def drain(s: int) -> None:
        """Wait for stream *s*'s copy to the host, then move its rows into *out*."""
        if pending[s] is not None:
            start, stop = pending[s]
            streams[s].synchronize()
            cuts = np.linspace(0, stop - start, COPY_THREADS + 1).astype(int)
            jobs = [
                copier.submit(np.copyto, out[start + a : start + b], staging[s][a:b])
                for a, b in zip(cuts[:-1], cuts[1:])
                if b > a
            ]
            for job in jobs:
                job.result()
            pending[s] = None

    try:
        for k, (start, stop) in enumerate(_blocks(n, block_rows, progress, "GPU, CuPy")):
            s = k % N_STREAMS
            drain(s)  # buffer s is free again (its previous block reached the host)
            rows = stop - start
            with streams[s]:
                distance_matrix_device(d_x[start:stop], d_y, out=blocks[s][:rows])
                cp.asnumpy(
                    blocks[s][:rows], stream=streams[s], out=staging[s][:rows], blocking=False
                )
            pending[s] = (start, stop)
        for s in range(N_STREAMS):
            drain(s)
    finally:
        copier.shutdown()
