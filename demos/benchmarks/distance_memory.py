"""Memory of the distance matrix: the drop-in's peak, and streaming a matrix larger than the GPU.

``run_memory``: peak GPU memory (CuPy's pool, through a memory hook) of the
drop-in and of the memory-lean version. ``run_chunked``: a float64 matrix of a
given size streamed to host memory block by block, its GB/s compared with the
pinned host-device copy bandwidth (the ceiling for streaming).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from demos import hardware
from demos.benchmarks import record
from demos.distance import reference


def run_memory(n: int, dtype: np.dtype, seed: int) -> dict[str, Any]:
    """Peak GPU memory (CuPy pool, via a MemoryHook) of the drop-in vs the lean version."""
    import cupy as cp

    from demos.distance import cupy_backend, cupy_lean

    class PeakHook(cp.cuda.MemoryHook):
        """Tracks bytes handed out by CuPy's memory pool and their maximum."""

        name = "demos_peak_memory"

        def __init__(self) -> None:
            super().__init__()
            self.current = 0
            self.peak = 0

        def malloc_postprocess(self, **kwargs: Any) -> None:
            self.current += kwargs["mem_size"]
            self.peak = max(self.peak, self.current)

        def free_postprocess(self, **kwargs: Any) -> None:
            self.current -= kwargs["mem_size"]

    pool = cp.get_default_memory_pool()
    points = np.random.default_rng(seed).random((n, 3)).astype(dtype)
    output_bytes = n * n * np.dtype(dtype).itemsize
    versions = {
        "cupy": cupy_backend.distance_matrix_device,
        "cupy-lean": cupy_lean.distance_matrix_device,
    }
    result: dict[str, Any] = {"n": n, "dtype": str(np.dtype(dtype)), "output_bytes": output_bytes}
    for name, fn in versions.items():
        pool.free_all_blocks()
        d_points = cp.asarray(points)
        hook = PeakHook()
        with hook:
            start = time.perf_counter()
            d_result = fn(d_points)
            cp.cuda.Device().synchronize()
            seconds = time.perf_counter() - start
        result[name] = {
            "peak_bytes": hook.peak,
            "peak_over_output": hook.peak / output_bytes,
            "pool_total_bytes": pool.total_bytes(),
            "seconds_first_call": seconds,
        }
        print(
            f"{name}: peak {hook.peak / 1e9:.2f} GB = {hook.peak / output_bytes:.2f} x the output"
        )
        del d_result, d_points
        pool.free_all_blocks()
    return result


def run_chunked(
    gigabytes: float, fraction: float, block_rows: int | None, seed: int, progress: bool = True
) -> dict[str, Any]:
    """Stream a float64 matrix of *gigabytes* GB to host memory; GB/s vs the copy bandwidth."""
    from demos.distance.chunked import N_STREAMS, choose_block_rows, distance_matrix

    n = int(math.sqrt(gigabytes * 1e9 / 8))
    points = np.random.default_rng(seed).random((n, 3))
    on_gpu = hardware.cupy_available()
    result: dict[str, Any] = {
        "n": n,
        "matrix_bytes": n * n * 8,
        "device": "gpu" if on_gpu else "cpu",
    }
    if on_gpu and block_rows is None:
        import cupy as cp

        free, total = cp.cuda.runtime.memGetInfo()
        block_rows = choose_block_rows(n, 8, free * fraction, N_STREAMS)
        result.update(
            device_free_bytes=free, device_total_bytes=total, device_memory_fraction=fraction
        )
        result["device_budget_bytes"] = free * fraction
        result["bandwidth"] = _copy_bandwidth()
    distance_matrix(points[:64], block_rows=16)  # warm-up (kernels, pinned allocator)
    out = np.empty((n, n))
    timings = {}
    # fresh_out: a new array, its first-touch page faults included; reused_out: the same
    # array again, as when a caller recomputes into an existing buffer or memmap.
    for label in ("fresh_out", "reused_out"):
        if label == "reused_out":
            out.fill(np.nan)  # so the check below sees what the timed run wrote
        start = time.perf_counter()
        distance_matrix(
            points,
            out=out,
            block_rows=block_rows,
            device_memory_fraction=fraction,
            progress=progress,
        )
        timings[label] = time.perf_counter() - start
    seconds = timings["fresh_out"]
    rows = np.random.default_rng(seed + 1).choice(n, size=min(n, 8), replace=False)
    expected = reference.reference_rows(points, rows)
    result.update(
        block_rows=block_rows,
        blocks=math.ceil(n / block_rows) if block_rows else None,
        seconds=seconds,
        gb_per_s=n * n * 8 / seconds / 1e9,
        seconds_reused_out=timings["reused_out"],
        gb_per_s_reused_out=n * n * 8 / timings["reused_out"] / 1e9,
        sampled_rows_max_abs_error=float(np.max(np.abs(out[rows] - expected))),
        last_row_finite=bool(np.isfinite(out[-1]).all()),
    )
    print(
        f"chunked: {result['matrix_bytes'] / 1e9:.1f} GB in {seconds:.2f} s = "
        f"{result['gb_per_s']:.1f} GB/s "
        f"(into a reused array: {result['gb_per_s_reused_out']:.1f} GB/s)"
    )
    return result


def _copy_bandwidth(nbytes: int = 2**30) -> dict[str, float]:
    """Device -> host and host -> device GB/s for pinned host memory (the ceiling for streaming)."""
    import cupy as cp
    import cupyx

    d = cp.zeros(nbytes // 8)
    pinned = cupyx.empty_pinned(d.shape, dtype=d.dtype)
    d2h = np.median(record.gpu_times(lambda a: a.get(out=pinned), (d,), 5))
    h2d = np.median(record.gpu_times(lambda a: d.set(a), (pinned,), 5))
    return {"d2h_pinned_gb_per_s": nbytes / d2h / 1e9, "h2d_pinned_gb_per_s": nbytes / h2d / 1e9}
