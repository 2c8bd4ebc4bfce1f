"""Chapter 4a's streams, graph and managed memory live beside the reference.

As :mod:`demos.profiling.live` does for the chapter's first sections: each
``*_TABLE`` is what :func:`demos.live.side_by_side` prints, :func:`reference`
reads a shipped result (or says it has not been measured yet and how to make
it), and :func:`measure` runs one part on this GPU at the size it suits.
"""

from __future__ import annotations

from typing import Any

from demos import live
from demos.live import Expect, Row, Table

#: The shipped reference of each part, and the command that makes it on a GPU node.
MAKE = {
    "streams_h100.json": "python -m demos bench streams --output DIR  (then copy DIR/streams.json)",
    "managed_h100.json": "python -m demos bench managed --output DIR  (then copy DIR/managed.json)",
}
PARTS = {
    "pipeline": "streams_h100.json",
    "graph": "streams_h100.json",
    "managed": "managed_h100.json",
}


def reference(part: str) -> live.Reference | None:
    """The reference of *part* ("pipeline", "graph", "managed"), or None, saying why."""
    name = PARTS[part]
    return live.reference_or_explain(name, MAKE[name], "results", part)


PIPELINE_TABLE = Table(
    "Copy in, kernel, copy out per chunk (pinned memory, CUDA events per stream)",
    (
        Row("chunks", "chunks", "", 0),
        Row("MB per chunk", lambda r: r["chunk_bytes"] / 1e6, "MB", 0),
        Row("1 stream: first copy to last", "1_streams.span_ms", "ms", 2),
        Row("1 stream: copy time hidden", "1_streams.copy_hidden_ms", "ms", 2),
        Row("4 streams: first copy to last", "4_streams.span_ms", "ms", 2),
        Row("4 streams: copies", "4_streams.copy_ms", "ms", 2),
        Row("4 streams: copy time hidden", "4_streams.copy_hidden_ms", "ms", 2),
        Row("1 stream / 4 streams", "speedup", "x", 2),
    ),
    Expect(
        "with four streams, copies run under other chunks' kernels and the whole takes less time",
        lambda r: r["4_streams"]["overlapped"] and r["speedup"] > 1.3,
        "Another process may be using this GPU's copy engines, or the kernels are too short "
        "at this size for the copies to hide under them.",
    ),
)

GRAPH_TABLE = Table(
    "Many tiny kernels: launched one by one from Python vs one CUDA graph (host time)",
    (
        Row("kernels", "kernels", "", 0),
        Row("floats per kernel", "elements", "", 0),
        Row("one by one", "one_by_one_ms", "ms", 2),
        Row("as one graph", "graph_ms", "ms", 2),
        Row("per kernel, one by one", "one_by_one_us_per_kernel", "µs", 2),
        Row("per kernel, in the graph", "graph_us_per_kernel", "µs", 2),
        Row("one by one / graph", "speedup", "x", 2),
    ),
    Expect(
        "a graph launches many tiny kernels with far less overhead than Python does one by one",
        lambda r: r["speedup"] > 1.5,
        "The kernels are large enough here that their run time, not their launch, sets the pace.",
    ),
)

MANAGED_TABLE = Table(
    "One kernel over managed memory the host wrote last: page faults vs a prefetch",
    (
        Row("MiB of float32", lambda r: r["bytes"] / 2**20, "MiB", 0),
        Row("concurrentManagedAccess", "concurrent_managed_access", "", 0),
        Row("kernel on device memory", "device_memory_ms", "ms", 3),
        Row("kernel, pages on the host", "managed_first_touch_ms", "ms", 3),
        Row("prefetch to the GPU", "prefetch_ms", "ms", 3),
        Row("kernel after the prefetch", "managed_after_prefetch_ms", "ms", 3),
        Row("prefetch + kernel", "prefetch_and_kernel_ms", "ms", 3),
        Row("prefetch call used", "prefetch_call", "", 0),
    ),
    Expect(
        "faulting pages in one by one costs more than one prefetch and the kernel together",
        lambda r: (
            None
            if r.get("prefetch_and_kernel_ms") is None
            else r["managed_first_touch_ms"] > r["prefetch_and_kernel_ms"]
        ),
        "Without concurrent managed access the driver moves the whole allocation when the "
        "kernel starts, which is itself one bulk copy.",
    ),
)


def measure(part: str) -> dict[str, Any]:
    """One part of ``bench streams`` or ``bench managed`` on this GPU, at the sizes it suits."""
    from demos import hardware

    if part not in PARTS:
        raise ValueError(f"no part {part!r}: choose one of {', '.join(PARTS)}")
    cp = hardware.require_cupy("chapter 4a's streams, graph and managed memory")
    if part == "pipeline":
        from demos.asynchrony import streams_bench

        return streams_bench.pipeline(cp)
    if part == "graph":
        from demos.asynchrony import streams_bench

        return streams_bench.graph(cp)
    from demos.asynchrony import managed

    return managed.run()["managed"]
