"""``python -m demos bench profiling``: the measurements of chapter 4a, on one GPU.

Writes ``profiling.json`` (see :mod:`demos.benchmarks.record` for the layout)
with five parts, each a lesson of the chapter:

``timing``    one CuPy distance matrix timed four ways: wall clock without a sync
              (measures only the launch), wall clock with a sync, CUDA events,
              and ``cupyx.profiler.benchmark`` (host and GPU time per call).
``syncs``     a loop of small device steps that reads a value each iteration
              (``float``) against one that reads once at the end.
``pipeline``  the chapter-3 pipeline (upload, row norms, inner products, combine,
              download) as a timeline of CUDA events, with its idle gaps.
``overlap``   chunks of work, each computed on the GPU and copied into pinned host
              memory, on one stream vs two: per-chunk compute and copy intervals,
              and the copy time hidden behind compute.
``pool``      CuPy's memory pool: bytes held after freeing an array, and the cost
              of an allocation from the pool vs from the driver.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from demos import gpu_timer, hardware
from demos.benchmarks import record
from demos.gpu_timer import event_ms
from demos.profiling.timeline import EventTimeline, from_records, overlap_time, summary


def timing_sizes() -> dict[str, int]:
    """Problem sizes for this GPU: large enough that GPU time dwarfs Python's launch time.

    The timing lesson needs a matrix whose computation takes milliseconds (so a
    wall clock without a sync, which sees only the launches, is clearly shorter),
    within a quarter of the GPU's memory (the drop-in needs about three float32
    matrices).
    """
    memory = hardware.gpu_memory_bytes() or 16 * 2**30
    n = 32768
    while n > 4096 and 3 * 4 * n * n > memory / 4:
        n //= 2
    return {
        "timing_n": n,
        "pipeline_n": 8192,
        "pool_bytes": int(min(2**30, memory // 16)),
        "overlap_chunk_bytes": int(min(64 * 2**20, memory // 256)),
        "overlap_chunks": 16,
    }


def timing_methods(cp: Any, n: int, repeats: int = 5) -> dict[str, Any]:
    """One CuPy distance matrix of *n* float32 points timed four ways (medians of *repeats*)."""
    from cupyx.profiler import benchmark

    from demos.distance.cupy_backend import distance_matrix_device as distance_matrix_gpu

    points = np.random.default_rng(0).random((n, 3), dtype=np.float32)
    x = cp.asarray(points)
    first = distance_matrix_gpu(x)
    want = ((points[:4, None, :] - points[None, :, :]) ** 2).sum(-1)
    if not np.allclose(first[:4].get(), want, rtol=1e-3, atol=1e-4):
        raise AssertionError("the CuPy distance matrix disagrees with NumPy")
    del first
    device = cp.cuda.Device()
    no_sync, with_sync, events = [], [], []
    for _ in range(repeats):
        device.synchronize()
        start = time.perf_counter()
        distance_matrix_gpu(x)
        no_sync.append(time.perf_counter() - start)  # only the launches: the GPU is still busy
        device.synchronize()
        start = time.perf_counter()
        distance_matrix_gpu(x)
        device.synchronize()
        with_sync.append(time.perf_counter() - start)
        with gpu_timer.span(cp) as timed:
            distance_matrix_gpu(x)
        events.append(timed.seconds())
    res = benchmark(distance_matrix_gpu, (x,), n_repeat=20, n_warmup=3)
    return {
        "n": n,
        "dtype": "float32",
        "wall_no_sync_ms": float(np.median(no_sync)) * 1e3,
        "wall_with_sync_ms": float(np.median(with_sync)) * 1e3,
        "cuda_events_ms": float(np.median(events)) * 1e3,
        "benchmark_cpu_median_ms": float(np.median(res.cpu_times)) * 1e3,
        "benchmark_gpu_median_ms": float(np.median(res.gpu_times[0])) * 1e3,
    }


def syncs(cp: Any, steps: int = 200, size: int = 2**23) -> dict[str, Any]:
    x = cp.ones(size, dtype=cp.float32)

    def per_step() -> float:
        total = 0.0
        for _ in range(steps):
            total += float((x * 1.5).sum())  # waits for the GPU every step
        return total

    def once() -> float:
        total = cp.zeros((), dtype=cp.float32)
        for _ in range(steps):
            total += (x * 1.5).sum()
        return float(total)  # one wait, at the end

    out = {"steps": steps, "size": size}
    for name, fn in (("sync_every_step", per_step), ("sync_once", once)):
        fn()
        times = record.wall_times(fn, repeats=5)
        out[f"{name}_ms"] = float(np.median(times)) * 1e3
    return out


def pipeline(cp: Any, n: int = 8192) -> dict[str, Any]:
    from demos.distance import generic

    host = np.random.default_rng(1).random((n, 3), dtype=np.float32)
    result = np.empty((n, n), np.float32)
    for attempt in range(2):  # the first pass compiles and allocates; record the second
        timeline = EventTimeline(use_gpu=True)
        with timeline.step("upload"):
            x = cp.asarray(host)
        with timeline.step("row norms (einsum)"):
            x2 = generic.row_norms(x)
        with timeline.step("inner products (matmul)"):
            xy = generic.inner_products(x, x)
        with timeline.step("combine"):
            d = generic.combine(x2, xy, x2)
        with timeline.step("download"):
            cp.asnumpy(d, out=result)
        records = timeline.records()
    return {
        "n": n,
        "dtype": "float32",
        "timeline": records,
        "summary": summary(from_records(records)),
    }


_WORK = """
float v = x + shift;
for (int k = 0; k < iterations; ++k) { v = v * 0.999f + 0.001f; }
y = v;
"""


def _work_kernel(cp: Any) -> Any:
    """Element-wise work whose cost is set by *iterations*: the compute of one chunk."""
    return cp.ElementwiseKernel(
        "float32 x, float32 shift, int32 iterations", "float32 y", _WORK, "demos_overlap_work"
    )


def _work_numpy(x: np.ndarray, shift: float, iterations: int) -> np.ndarray:
    v = (x + np.float32(shift)).astype(np.float32)
    for _ in range(iterations):
        v = v * np.float32(0.999) + np.float32(0.001)
    return v


def _calibrate(cp: Any, work: Any, x: Any, block: Any, pinned: np.ndarray) -> tuple[int, float]:
    """Iterations that make one chunk's compute take as long as its copy to pinned memory."""
    copy_ms = event_ms(cp, lambda: block.get(out=pinned), repeats=5)
    iterations = 1024  # enough that the work is bound by arithmetic, not by memory
    for _ in range(2):  # the second pass corrects for what the first could not see
        compute_ms = event_ms(
            cp, lambda n=iterations: work(x, np.float32(0), np.int32(n), block), repeats=3
        )
        iterations = int(min(200_000, max(1, round(iterations * copy_ms / max(compute_ms, 1e-6)))))
    return iterations, copy_ms


def overlap(cp: Any, chunk_bytes: int = 64 * 2**20, chunks: int = 16) -> dict[str, Any]:
    """Compute and copy *chunks* chunks, on one stream and on two: how much copy time hides.

    Each chunk is computed into a device buffer (element-wise work, calibrated
    so that it takes about as long as the chunk's copy) and copied straight into
    its slice of one pinned host array, asynchronously. With one stream the GPU
    alternates compute and copy; with two, one stream's copy runs on the copy
    engine while the other stream computes, which only pinned memory allows.
    """
    import cupyx

    elements = chunk_bytes // 4
    work = _work_kernel(cp)
    x = cp.random.default_rng(2).random(elements, dtype=cp.float32)
    out = cupyx.empty_pinned((chunks, elements), np.float32)
    out.fill(0)  # touched once: no page faults inside the timed runs
    probe_block = cp.empty(elements, cp.float32)
    iterations, copy_chunk_ms = _calibrate(cp, work, x, probe_block, out[0])
    del probe_block
    results: dict[str, Any] = {
        "chunks": chunks,
        "chunk_bytes": elements * 4,
        "dtype": "float32",
        "iterations": iterations,
        "copy_chunk_ms": copy_chunk_ms,
    }
    for n_streams in (1, 2):
        streams = [cp.cuda.Stream(non_blocking=True) for _ in range(n_streams)]
        blocks = [cp.empty(elements, cp.float32) for _ in range(n_streams)]
        best: tuple[float, list[dict[str, Any]]] | None = None
        for _attempt in range(3):  # the first pass warms up; keep the fastest
            cp.cuda.Device().synchronize()
            timeline = EventTimeline(use_gpu=True)
            start = time.perf_counter()
            for k in range(chunks):
                s = k % n_streams
                with streams[s]:
                    with timeline.step("compute", streams[s]):
                        work(x, np.float32(k), np.int32(iterations), blocks[s])
                    with timeline.step("copy to host", streams[s]):
                        blocks[s].get(stream=streams[s], out=out[k], blocking=False)
            for stream in streams:
                stream.synchronize()
            wall = time.perf_counter() - start
            if best is None or wall < best[0]:
                best = (wall, timeline.records())
        wall, records = best
        intervals = from_records(records)
        compute = [iv for iv in intervals if iv.name == "compute"]
        copies = [iv for iv in intervals if iv.name == "copy to host"]
        results[f"{n_streams}_streams"] = {
            "wall_ms": wall * 1e3,
            "timeline": records,
            "copy_ms": sum(iv.duration for iv in copies),
            "compute_ms": sum(iv.duration for iv in compute),
            "copy_overlapped_ms": overlap_time(copies, compute),
            "summary": summary(intervals),
        }
    host_x = x[:256].get()
    results["correct"] = all(
        np.allclose(out[k, :256], _work_numpy(host_x, k, iterations), rtol=1e-3, atol=1e-3)
        for k in (0, chunks // 2, chunks - 1)
    )
    one, two = results["1_streams"]["wall_ms"], results["2_streams"]["wall_ms"]
    results["speedup"] = one / two
    return results


def pool(cp: Any, nbytes: int = 2**30) -> dict[str, Any]:
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    cp.cuda.Device().synchronize()

    def allocate() -> None:
        cp.empty(nbytes, dtype=cp.uint8)
        cp.cuda.Device().synchronize()

    start = time.perf_counter()
    a = cp.empty(nbytes, dtype=cp.uint8)
    fresh = time.perf_counter() - start
    held_in_use = pool.used_bytes()
    del a
    held_after_del = pool.total_bytes()
    reuse = float(np.median(record.wall_times(allocate, repeats=20)))
    pool.free_all_blocks()
    return {
        "nbytes": nbytes,
        "fresh_allocation_ms": fresh * 1e3,
        "pool_allocation_ms": reuse * 1e3,
        "used_bytes_while_alive": held_in_use,
        "pool_bytes_after_del": held_after_del,
        "pool_bytes_after_free_all_blocks": pool.total_bytes(),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """All five parts on this machine's GPU, sized for it; *quick* shrinks every size (smoke
    test)."""
    cp = hardware.require_cupy("the profiling benchmark")
    sizes = timing_sizes()
    scale = 8 if quick else 1
    return {
        "timing": timing_methods(cp, sizes["timing_n"] // scale),
        "syncs": syncs(cp, 200, 2**23 // scale),
        "pipeline": pipeline(cp, sizes["pipeline_n"] // scale),
        "overlap": overlap(cp, sizes["overlap_chunk_bytes"] // scale, sizes["overlap_chunks"]),
        "pool": pool(cp, sizes["pool_bytes"] // scale),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "profiling")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(
        args, "profiling", "The profiling benchmark", run, ["demos/profiling"]
    )
