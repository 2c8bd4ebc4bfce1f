"""``python -m demos bench lessons``: run the measured lessons and write ``lessons.json``.

The GPU lessons (divergence, coalescing, copies) need a CUDA GPU; without one
they are recorded as skipped with the reason, so that a file made on a laptop
says plainly that it holds no GPU numbers. The NumPy baseline runs everywhere.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from demos import hardware
from demos.benchmarks.record import DEFAULT_OUTPUT_DIR, write_result

LESSONS = ("divergence", "coalescing", "copies", "numpy_baseline")
GPU_LESSONS = ("divergence", "coalescing", "copies")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT_DIR,
        help="folder for lessons.json (default: %(default)s)",
    )
    parser.add_argument(
        "--only",
        choices=LESSONS,
        action="append",
        help="run only this lesson (repeatable); default: all",
    )
    parser.add_argument(
        "--numpy-n",
        type=int,
        default=None,
        help="points for the NumPy baseline (default: 16384 with a GPU, 4096 without)",
    )
    parser.add_argument("--repeats", type=int, default=10, help="timed repeats per GPU measurement")


def run_lessons(chosen: tuple[str, ...], numpy_n: int, repeats: int) -> dict[str, Any]:
    """Results per lesson; a GPU lesson on a machine without a usable GPU records why it was
    skipped."""
    gpu = hardware.has_gpu() and not hardware.simulator_enabled()
    reason = (
        hardware.no_gpu_reason() or "Numba runs in the CUDA simulator, which does not time anything"
    )
    results: dict[str, Any] = {}
    for lesson in chosen:
        if lesson in GPU_LESSONS and not gpu:
            results[lesson] = {"skipped": f"needs a CUDA GPU: {reason}"}
            continue
        print(f"measuring {lesson} ...", flush=True)
        if lesson == "divergence":
            from demos.lessons import divergence

            results[lesson] = divergence.run(n=1 << 24, iterations=200, repeats=repeats)
        elif lesson == "coalescing":
            from demos.lessons import coalescing

            results[lesson] = coalescing.run(
                n=4096, blocks=[(32, 8), (8, 8), (16, 16)], repeats=repeats
            )
        elif lesson == "copies":
            from demos.lessons import copies

            results[lesson] = copies.run(n=4096, repeats=max(3, repeats // 2))
        else:
            from demos.lessons import numpy_baseline

            results[lesson] = numpy_baseline.run(n=numpy_n, repeats=3)
    return results


def main(args: argparse.Namespace) -> int:
    chosen = tuple(args.only or LESSONS)
    numpy_n = args.numpy_n or (16384 if hardware.has_gpu() else 4096)
    results = run_lessons(chosen, numpy_n, args.repeats)
    path = write_result(
        Path(args.output) / "lessons.json",
        "lessons",
        results,
        sources=["demos/lessons"],
        lessons=list(chosen),
        numpy_n=numpy_n,
        repeats=args.repeats,
    )
    print(f"wrote {path}")
    return 0
