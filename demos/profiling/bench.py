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
``overlap``   the chunked distance matrix with one stream vs two streams and
              pinned staging: per-block compute and copy intervals, overlap achieved.
``pool``      CuPy's memory pool: bytes held after freeing an array, and the cost
              of an allocation from the pool vs from the driver.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from demos import hardware
from demos.benchmarks import record
from demos.profiling.timeline import EventTimeline, from_records, overlap_time, summary


def timing_methods(cp: Any, n: int) -> dict[str, Any]:
    from cupyx.profiler import benchmark

    from demos.distance.cupy_backend import distance_matrix_device as distance_matrix_gpu

    x = cp.asarray(np.random.default_rng(0).random((n, 3), dtype=np.float32))
    distance_matrix_gpu(x)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    distance_matrix_gpu(x)
    no_sync = time.perf_counter() - start
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    distance_matrix_gpu(x)
    cp.cuda.Device().synchronize()
    with_sync = time.perf_counter() - start
    begin, end = cp.cuda.Event(), cp.cuda.Event()
    begin.record()
    distance_matrix_gpu(x)
    end.record()
    end.synchronize()
    events = cp.cuda.get_elapsed_time(begin, end) / 1e3
    res = benchmark(distance_matrix_gpu, (x,), n_repeat=20, n_warmup=3)
    return {
        "n": n,
        "dtype": "float32",
        "wall_no_sync_ms": no_sync * 1e3,
        "wall_with_sync_ms": with_sync * 1e3,
        "cuda_events_ms": events * 1e3,
        "benchmark_cpu_median_ms": float(np.median(res.cpu_times)) * 1e3,
        "benchmark_gpu_median_ms": float(np.median(res.gpu_times[0])) * 1e3,
    }


def _syncs(cp: Any, steps: int, size: int) -> dict[str, Any]:
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


def _pipeline(cp: Any, n: int) -> dict[str, Any]:
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


def _overlap(cp: Any, n: int, block_rows: int) -> dict[str, Any]:
    import cupyx

    from demos.distance.cupy_lean import distance_matrix_device as distance_matrix_lean

    x = cp.asarray(np.random.default_rng(2).random((n, 3), dtype=np.float32))
    out = np.empty((n, n), np.float32)
    out.fill(0)  # touched once, so page faults do not hide the copies
    results = {}
    for n_streams in (1, 2):
        streams = [cp.cuda.Stream(non_blocking=True) for _ in range(n_streams)]
        blocks = [cp.empty((block_rows, n), np.float32) for _ in range(n_streams)]
        staging = [cupyx.empty_pinned((block_rows, n), np.float32) for _ in range(n_streams)]
        for attempt in range(2):
            cp.cuda.Device().synchronize()
            timeline = EventTimeline(use_gpu=True)
            start = time.perf_counter()
            pending: list[tuple[int, int] | None] = [None] * n_streams
            for k, row in enumerate(range(0, n, block_rows)):
                s = k % n_streams
                if pending[s] is not None:
                    streams[s].synchronize()
                    a, b = pending[s]
                    out[a:b] = staging[s][: b - a]
                rows = min(block_rows, n - row)
                with streams[s]:
                    with timeline.step("compute", streams[s]):
                        distance_matrix_lean(x[row : row + rows], x, out=blocks[s][:rows])
                    with timeline.step("copy to host", streams[s]):
                        cp.asnumpy(
                            blocks[s][:rows],
                            stream=streams[s],
                            out=staging[s][:rows],
                            blocking=False,
                        )
                pending[s] = (row, row + rows)
            for s in range(n_streams):
                if pending[s] is not None:
                    streams[s].synchronize()
                    a, b = pending[s]
                    out[a:b] = staging[s][: b - a]
            wall = time.perf_counter() - start
            records = timeline.records()
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
    check = np.random.default_rng(3).integers(0, n, 8)
    ref = ((x.get()[check, None, :] - x.get()[None, :, :]) ** 2).sum(-1)
    results["correct"] = bool(np.allclose(out[check], ref, rtol=1e-4, atol=1e-4))
    return {"n": n, "block_rows": block_rows, "dtype": "float32", **results}


def _pool(cp: Any, nbytes: int) -> dict[str, Any]:
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
    """All five parts on this machine's GPU; *quick* shrinks every size (for a smoke test)."""
    cp = hardware.require_cupy("the profiling benchmark")
    scale = 8 if quick else 1
    return {
        "timing": timing_methods(cp, 8192 // scale),
        "syncs": _syncs(cp, 200, 2**20 // scale),
        "pipeline": _pipeline(cp, 8192 // scale),
        "overlap": _overlap(cp, 32768 // scale, 2048 // scale),
        "pool": _pool(cp, 2**30 // scale),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "profiling")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(args, "profiling", "The profiling benchmark", run)
