"""Chapter 4a live beside the reference: its tables, its measurements, its reference results.

As :mod:`demos.multigpu.live` does for chapter 6: each ``*_TABLE`` is what
:func:`demos.live.side_by_side` prints, :func:`measure` runs one part on this
GPU, :func:`reference` reads a shipped result of chapters 4a and 4b or says how
to make one, and :func:`intervals_of` reads a recorded timeline. The immediate
checks of chapter 4a's "your turn" cells are in :mod:`demos.checks.profiling_checks`,
with those of the other chapters.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from demos import shipped_results
from demos.live import Expect, Row, Table
from demos.profiling import timeline

#: Shipped reference results of this chapter and the command that makes each.
REFERENCES = {
    "profiling_h200": (
        "python -m demos bench profiling --output DIR  (then copy DIR/profiling.json)"
    ),
    "ncu_kernels_h200": "tools/gpu-node/ncu_kernels.sh DIR  (then copy DIR/ncu_kernels.json)",
    "patterns_h200": "python -m demos bench patterns --output DIR  (then copy DIR/patterns.json)",
}


def reference(name: str) -> dict[str, Any] | None:
    """``demos/results/<name>.json``, or None after saying that none is shipped and how to make
    it."""
    data = shipped_results.load(name)
    if data is None:
        how = REFERENCES.get(name, "the chapter's benchmark command")
        print(
            f"No reference result demos/results/{name}.json "
            "is shipped with this copy of the course.\n"
            f"On a GPU node, make it with: {how}"
        )
        return None
    gpus = data.get("environment", {}).get("gpus") or [{"name": "no GPU recorded"}]
    print(
        f"Reference: demos/results/{name}.json, measured on {gpus[0]['name']} "
        f"({data.get('environment', {}).get('date', 'date not recorded')})"
    )
    return data


def intervals_of(
    records: list[dict[str, Any]], name: str | None = None
) -> list[tuple[float, float]]:
    """(start, end) pairs of a recorded timeline, optionally only the steps called *name*."""
    return [(r["start_ms"], r["end_ms"]) for r in records if name is None or r["name"] == name]


__all__ = [
    "CHUNKED_TABLE",
    "OVERLAP_TABLE",
    "PIPELINE_TABLE",
    "POOL_TABLE",
    "SYNCS_TABLE",
    "TIMING_TABLE",
    "intervals_of",
    "measure",
    "reference",
    "timeline",
]


# ------------------------------------------------------------ what chapter 4a measures, live
def _step_ms(records: list[dict[str, Any]], name: str) -> float:
    return sum(r["end_ms"] - r["start_ms"] for r in records if r["name"] == name)


def _model_two_streams(overlap: dict[str, Any]) -> float:
    """The chapter's model of a two-stream pipeline, from the one-stream run's per-chunk times."""
    one, chunks = overlap["1_streams"], overlap["chunks"]
    compute, copy = one["compute_ms"] / chunks, one["copy_ms"] / chunks
    return compute + copy + (chunks - 1) * max(compute, copy)


PIPELINE_STEPS = ("upload", "row norms (einsum)", "inner products (matmul)", "combine", "download")

TIMING_TABLE = Table(
    "One CuPy distance matrix (float32) timed four ways",
    (
        Row("n", "n", "", 0),
        Row("wall clock, no sync", "wall_no_sync_ms", "ms", 3),
        Row("wall clock, with sync", "wall_with_sync_ms", "ms", 3),
        Row("CUDA events", "cuda_events_ms", "ms", 3),
        Row("benchmark(): host time", "benchmark_cpu_median_ms", "ms", 3),
        Row("benchmark(): GPU time", "benchmark_gpu_median_ms", "ms", 3),
    ),
    Expect(
        "a wall clock without a sync sees only the launches, far less than the GPU's time",
        lambda r: r["wall_no_sync_ms"] < 0.7 * r["cuda_events_ms"],
        "The matrix is small enough on this GPU that launching its kernels takes as long as "
        "running them.",
    ),
)

SYNCS_TABLE = Table(
    "Reading a result every step vs once at the end",
    (
        Row("steps", "steps", "", 0),
        Row("float32 values per step", "size", "", 0),
        Row("sync every step", "sync_every_step_ms", "ms", 2),
        Row("sync once", "sync_once_ms", "ms", 2),
        Row("every step / once", lambda r: r["sync_every_step_ms"] / r["sync_once_ms"], "x", 2),
    ),
    Expect(
        "waiting for the GPU every step costs time: the host cannot queue work ahead",
        lambda r: r["sync_every_step_ms"] > 1.1 * r["sync_once_ms"],
        "Each step's GPU work is so short here that Python's own time per step dominates both.",
    ),
)

PIPELINE_TABLE = Table(
    "The chapter-3 pipeline as a timeline of CUDA events (float32)",
    (
        Row("n", "n", "", 0),
        *(
            Row(step, lambda r, s=step: _step_ms(r["timeline"], s), "ms", 3)
            for step in PIPELINE_STEPS
        ),
        Row("span", "summary.span_ms", "ms", 3),
        Row("idle", "summary.idle_ms", "ms", 3),
    ),
    Expect(
        "the download takes longer than all the computing together",
        lambda r: (
            _step_ms(r["timeline"], "download")
            > sum(_step_ms(r["timeline"], s) for s in PIPELINE_STEPS[1:4])
        ),
        "This node's host copies are fast enough to keep up with its GPU.",
    ),
)

OVERLAP_TABLE = Table(
    "Compute and copy in chunks: one stream vs two (pinned host memory)",
    (
        Row("chunks", "chunks", "", 0),
        Row("MB per chunk", lambda r: r["chunk_bytes"] / 1e6, "MB", 0),
        Row("1 stream: wall clock", "1_streams.wall_ms", "ms", 2),
        Row("1 stream: copies", "1_streams.copy_ms", "ms", 2),
        Row("1 stream: compute", "1_streams.compute_ms", "ms", 2),
        Row("1 stream: copy time hidden", "1_streams.copy_overlapped_ms", "ms", 2),
        Row("2 streams: wall clock", "2_streams.wall_ms", "ms", 2),
        Row("2 streams: copy time hidden", "2_streams.copy_overlapped_ms", "ms", 2),
        Row("model for two streams", _model_two_streams, "ms", 2),
        Row("1 stream / 2 streams", "speedup", "x", 2),
    ),
    Expect(
        "with two streams most of the copy time hides behind compute",
        lambda r: (
            r["2_streams"]["copy_overlapped_ms"] > 0.5 * r["2_streams"]["copy_ms"]
            and r["speedup"] > 1.3
        ),
        "This GPU serialised the streams (another process may hold its copy engine).",
    ),
)

CHUNKED_TABLE = Table(
    "A matrix larger than the GPU's share, streamed to the host in blocks (float64)",
    (
        Row("GB of matrix", lambda r: r["matrix_bytes"] / 1e9, "GB", 1),
        Row("blocks", "blocks", "", 0),
        Row("into a fresh array", "gb_per_s", "GB/s", 1),
        Row("into a reused array", "gb_per_s_reused_out", "GB/s", 1),
        Row("pinned copy alone", "bandwidth.d2h_pinned_gb_per_s", "GB/s", 1),
    ),
    Expect(
        "a fresh array's page faults, not the GPU, limit the stream",
        lambda r: r["gb_per_s_reused_out"] > 1.5 * r["gb_per_s"],
        "This host maps fresh memory quickly (huge pages), so a fresh array costs little.",
    ),
)

POOL_TABLE = Table(
    "CuPy's memory pool: allocating, freeing, allocating again",
    (
        Row("GiB allocated", lambda r: r["nbytes"] / 2**30, "GiB", 2),
        Row("first allocation", "fresh_allocation_ms", "ms", 3),
        Row("again, from the pool", "pool_allocation_ms", "ms", 3),
        Row("held after del", lambda r: r["pool_bytes_after_del"] / 2**30, "GiB", 2),
        Row(
            "after free_all_blocks",
            lambda r: r["pool_bytes_after_free_all_blocks"] / 2**30,
            "GiB",
            2,
        ),
    ),
    Expect(
        "an allocation from the pool is far cheaper than one from the driver, and del keeps "
        "the memory",
        lambda r: (
            r["pool_allocation_ms"] < r["fresh_allocation_ms"]
            and r["pool_bytes_after_del"] >= r["nbytes"]
        ),
        "The driver had this memory at hand already.",
    ),
)


def measure(part: str) -> dict[str, Any]:
    """One part of ``python -m demos bench profiling`` on this GPU, at the sizes it suits."""
    from demos import hardware
    from demos.profiling import bench

    cp = hardware.require_cupy("chapter 4a's measurements")
    sizes = bench.timing_sizes()
    if part == "timing":
        return bench.timing_methods(cp, sizes["timing_n"])
    if part == "syncs":
        return bench.syncs(cp)
    if part == "pipeline":
        return bench.pipeline(cp, sizes["pipeline_n"])
    if part == "overlap":
        return bench.overlap(cp, sizes["overlap_chunk_bytes"], sizes["overlap_chunks"])
    if part == "pool":
        return bench.pool(cp, sizes["pool_bytes"])
    if part == "chunked":
        from demos.benchmarks.distance_memory import run_chunked

        with contextlib.redirect_stdout(io.StringIO()):
            return run_chunked(4.0, 0.05, None, seed=0, progress=False)
    raise ValueError(f"no part {part!r} in chapter 4a")
