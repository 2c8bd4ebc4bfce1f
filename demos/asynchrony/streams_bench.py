"""``python -m demos bench streams``: chapter 4a's streams and graph, as the students build them.

Writes ``streams.json`` (layout: :mod:`demos.benchmarks.record`) with two parts:

``pipeline``  chunks copied in, worked on and copied back, by the chapter's model
              answer (``demos/checks/answers/streamed_work.py``), on one stream and
              on four: from CUDA events per stream, the time from the first copy in
              to the last copy out and the copy time that ran under another
              stream's kernel (and the host's time for the whole call, which also
              makes and fills the pinned buffers). The kernel is calibrated to take
              about as long as one chunk's copy.
``graph``     many tiny in-place kernels (``x *= 0.5; x += 1`` on a few thousand
              floats) launched one by one from Python vs captured once into a CUDA
              graph (``demos/checks/answers/capture_steps.py``) and launched as one:
              host time per kernel, each result checked against NumPy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from demos import cupy_standin, hardware
from demos.asynchrony.overlap import first_wrong_chunk, gpu_modules, make_work, read_overlap
from demos.benchmarks import record
from demos.profiling.timeline import EventTimeline, from_records, summary

SOURCES = [
    "demos/asynchrony/streams_bench.py",
    "demos/asynchrony/overlap.py",
    "demos/checks/answers/streamed_work.py",
    "demos/checks/answers/capture_steps.py",
]


def calibrated_iterations(cp: Any, elements: int) -> int:
    """Iterations that make the work on one chunk of *elements* float32 take as long as copying
    the chunk to pinned host memory (so that a pipeline of copy, kernel, copy is balanced)."""
    import cupyx

    from demos.profiling.bench import _calibrate, _work_kernel

    x = cp.random.default_rng(3).random(elements, dtype=cp.float32)
    block = cp.empty_like(x)
    pinned = cupyx.empty_pinned(elements, np.float32)
    iterations, _ = _calibrate(cp, _work_kernel(cp), x, block, pinned)
    return iterations


ANSWERS = Path(__file__).resolve().parents[1] / "checks" / "answers"


def _answer(name: str) -> Any:
    """The chapter's model answer *name*, run from its file: the benchmark measures exactly the
    code students compare theirs with (read as a file: the checks are a layer above this one)."""
    path = ANSWERS / f"{name}.py"
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102
    return namespace[name]


def pipeline(
    cp: Any, chunks: int = 16, elements: int = 2**22, iterations: int | None = None
) -> dict[str, Any]:
    """The model answer's pipeline on one stream and on four; *iterations* None: calibrated."""
    streamed_work = _answer("streamed_work")
    on_gpu = cp is not cupy_standin.module
    iterations = calibrated_iterations(cp, elements) if iterations is None else iterations
    work = make_work(cp, iterations)
    data = np.random.default_rng(4).random((chunks, elements), dtype=np.float32)
    out: dict[str, Any] = {
        "chunks": chunks,
        "chunk_bytes": elements * 4,
        "iterations": iterations,
        "clock": "gpu" if on_gpu else "host (stand-in: no GPU, nothing overlaps)",
    }
    for n_streams in (1, 4):
        streamed_work(data, work, n_streams, EventTimeline(use_gpu=on_gpu))  # warm-up
        runs = []
        for _ in range(3):
            cp.cuda.Device().synchronize()
            timeline = EventTimeline(use_gpu=on_gpu)
            start = time.perf_counter()
            result = streamed_work(data, work, n_streams, timeline)
            runs.append((time.perf_counter() - start, timeline.records()))
        wall, records = min(runs, key=lambda run: read_overlap(from_records(run[1])).span_ms)
        seen = read_overlap(from_records(records))
        out[f"{n_streams}_streams"] = {
            "span_ms": seen.span_ms,  # first copy in to last copy out, on the GPU's clock
            "wall_ms": wall * 1e3,  # the whole call, pinned buffers made and filled included
            "copy_ms": seen.copy_ms,
            "kernel_ms": seen.kernel_ms,
            "copy_hidden_ms": seen.hidden_ms,
            "overlapped": seen.overlapped,
            "summary": summary(from_records(records)),
            "timeline": records,
            "correct": first_wrong_chunk(result, data, iterations) is None,
        }
    out["speedup"] = out["1_streams"]["span_ms"] / out["4_streams"]["span_ms"]
    return out


def graph(cp: Any, steps: int = 2000, elements: int = 4096, repeats: int = 5) -> dict[str, Any]:
    """*steps* x two tiny kernels, launched one by one and as one captured graph (host time)."""
    capture_steps = _answer("capture_steps")
    x0 = np.linspace(-1.0, 1.0, elements, dtype=np.float32)
    x = cp.asarray(x0)
    stream = cp.cuda.Stream(non_blocking=True)

    def one_by_one() -> None:
        nonlocal x  # the in-place operators give x back: it stays the same array
        with stream:
            for _ in range(steps):
                x *= 0.5
                x += 1.0
        stream.synchronize()

    one_by_one()  # loads both kernels before the capture records them
    built = time.perf_counter()
    captured = capture_steps(x, steps)
    capture_s = time.perf_counter() - built

    def as_graph() -> None:
        captured.launch(stream)
        stream.synchronize()

    want = x0.copy()
    for _ in range(steps):
        want = want * np.float32(0.5) + np.float32(1.0)
    times = {}
    for name, fn in (("one_by_one", one_by_one), ("graph", as_graph)):
        x.set(x0)
        fn()
        correct = bool(np.allclose(x.get(), want, rtol=1e-5, atol=1e-6))
        times[name] = (statistics.median(record.wall_times(fn, repeats=repeats)), correct)
    kernels = 2 * steps
    return {
        "steps": steps,
        "kernels": kernels,
        "elements": elements,
        "capture_ms": capture_s * 1e3,
        "one_by_one_ms": times["one_by_one"][0] * 1e3,
        "graph_ms": times["graph"][0] * 1e3,
        "one_by_one_us_per_kernel": times["one_by_one"][0] / kernels * 1e6,
        "graph_us_per_kernel": times["graph"][0] / kernels * 1e6,
        "speedup": times["one_by_one"][0] / times["graph"][0],
        "correct": times["one_by_one"][1] and times["graph"][1],
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Both parts on this GPU; *quick* shrinks them (a smoke test, not a reference)."""
    hardware.require_cupy("the streams benchmark")
    cp, _ = gpu_modules()
    scale = 16 if quick else 1
    return {
        "pipeline": pipeline(cp, 16, 2**22 // scale),
        "graph": graph(cp, 2000 // scale),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "streams")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(args, "streams", "The streams benchmark", run, SOURCES)
