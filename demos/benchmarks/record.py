"""Timing and writing benchmark results: one JSON layout for every benchmark of the course.

Two clocks, one helper each: :func:`wall_times` (host wall clock, for CPU code
and for what a user of a GPU function waits for) and :func:`gpu_times` (CUDA
events, :mod:`demos.gpu_timer`, for work on the GPU alone).

A timing means nothing without the machine it was taken on and the code it
measured, so every result file records the hardware and package versions next
to the numbers, and its provenance (:mod:`demos.provenance`: the sources it
measured, their hash, the commit). Reference results ship in ``demos/results/``;
a student's own runs go to ``bench-results/`` (git-ignored) unless told otherwise.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from demos import gpu_timer, hardware, provenance, shipped_results

PACKAGE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT_DIR = Path("bench-results")


def environment_record() -> dict[str, Any]:
    """The machine and software a measurement was taken with."""
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        **hardware.report(include_tensorflow=False),
    }


def wall_times(fn: Callable[..., Any], *args: Any, repeats: int = 3) -> list[float]:
    """Wall-clock seconds of *repeats* calls ``fn(*args)``: CPU code, or GPU code host to host.

    GPU work alone is timed with CUDA events instead (``cupyx.profiler.benchmark``).
    """
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return times


def gpu_times(fn: Callable[..., Any], args: tuple = (), repeats: int = 5, warmup: int = 2):
    """Seconds per call of ``fn(*args)`` on the GPU (CUDA events around each call), as a list.

    An event is recorded before and after every call (:mod:`demos.gpu_timer`), so
    the host's own time (Python, launch overhead) is not counted unless it
    starves the GPU.
    """
    import cupy as cp

    return gpu_timer.event_seconds(cp, lambda: fn(*args), repeats, warmup)


def per_call_seconds(
    fn: Callable[[], Any], synchronize: Callable[[], Any], calls: int, batches: int = 5
) -> float:
    """Wall-clock seconds per call of *fn* in back-to-back calls: the median of *batches* batches.

    What an application calling *fn* in a loop pays, host overhead included: for
    small problems that is the launch cost, for large ones the GPU's time. Each
    batch makes *calls* calls and synchronises once; the median batch ignores a
    batch slowed by something else on the node (a clock ramping up, another process).
    """
    fn()
    synchronize()  # warm (compiled, cached) and idle before the clock starts
    means = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize()
        means.append((time.perf_counter() - start) / calls)
    return statistics.median(means)


def summarize(seconds: list[float]) -> dict[str, float]:
    """Median, mean, min and spread of repeated timings, in seconds."""
    return {
        "median_s": statistics.median(seconds),
        "mean_s": statistics.fmean(seconds),
        "min_s": min(seconds),
        "stdev_s": statistics.stdev(seconds) if len(seconds) > 1 else 0.0,
        "repeats": len(seconds),
    }


def write_result(
    path: str | os.PathLike,
    benchmark: str,
    results: Any,
    *,
    sources: Sequence[str],
    **parameters: Any,
) -> Path:
    """Write ``{"benchmark", "parameters", "environment", "results", "provenance"}`` to *path*.

    *sources*: the files and folders (relative to the checkout) whose code was measured.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = provenance.stamp(
        {
            "benchmark": benchmark,
            "parameters": parameters,
            "environment": environment_record(),
            "results": results,
        },
        sources,
    )
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)  # never leave a half-written file behind
    return path


def write_json(path: str | os.PathLike, data: Any, *, sources: Sequence[str], **facts: Any) -> Path:
    """Write plain JSON: the original course's files, whose format has no room for provenance.

    Their provenance (*sources* measured, plus *facts*) goes to a sidecar next to them.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    provenance.write_sidecar(path, sources, **facts)
    return path


def load_reference(relative_path: str) -> Any:
    """JSON shipped in ``demos/`` (e.g. ``"measurements.json"``), or None with a message.

    For the notebooks: a copy of the course without the reference files still
    runs, and says what it cannot show.
    """
    path = PACKAGE_DIR / relative_path
    if not path.exists():
        print(
            f"Reference results not found: demos/{relative_path} is missing in this copy of "
            "the course. The plot below is skipped; run the benchmark yourself on a GPU to make it."
        )
        return None
    return shipped_results.read_json(path)


def show_reference_figures(*names: str) -> None:
    """Show figures from ``demos/results/`` (drawn by ``python -m demos plot``) in a notebook."""
    from IPython.display import Image, display

    for name in names:
        path = shipped_results.RESULTS_DIR / name
        if path.exists():
            display(Image(filename=str(path)))
        else:
            print(f"Reference figure not found: demos/results/{name}")


def add_gpu_bench_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """The options of every GPU-only benchmark command: ``--output`` and ``--quick``."""
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT_DIR,
        help=f"folder for {name}.json (default: bench-results/)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: a smoke test, not a reference"
    )


def run_gpu_bench(
    args: argparse.Namespace,
    name: str,
    title: str,
    run: Callable[[bool], dict[str, Any]],
    sources: Sequence[str],
) -> int:
    """Run a GPU-only benchmark of *sources*, write ``<output>/<name>.json``; no GPU: say why."""
    if not hardware.cupy_available():
        print(f"{title} needs a GPU with CuPy: {hardware.cupy_status()[1]}")
        return 1
    results = run(args.quick)
    path = write_result(
        Path(args.output) / f"{name}.json", name, results, sources=sources, quick=args.quick
    )
    print(f"wrote {path}")
    return 0
