"""``python -m demos bench lessons``: run the measured lessons and write ``lessons.json``.

The GPU lessons (divergence, coalescing, copies) need a CUDA GPU; without one
they are recorded as skipped with the reason, so that a file made on a laptop
says plainly that it holds no GPU numbers. The NumPy baseline runs everywhere.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from demos import hardware
from demos.benchmarks.record import DEFAULT_OUTPUT_DIR, write_result

#: Each measured lesson (``demos.lessons.<name>``): whether it needs a GPU, and the
#: arguments of its ``run`` for the reference, from ``--repeats`` and ``--numpy-n``.
LESSONS: dict[str, tuple[bool, Callable[[int, int], dict[str, Any]]]] = {
    "divergence": (True, lambda repeats, _: {"n": 1 << 24, "iterations": 200, "repeats": repeats}),
    "coalescing": (
        True,
        lambda repeats, _: {"n": 4096, "blocks": [(32, 8), (8, 8), (16, 16)], "repeats": repeats},
    ),
    "copies": (True, lambda repeats, _: {"n": 4096, "repeats": max(3, repeats // 2)}),
    "numpy_baseline": (False, lambda _, numpy_n: {"n": numpy_n, "repeats": 3}),
}
GPU_LESSONS = tuple(name for name, (needs_gpu, _) in LESSONS.items() if needs_gpu)


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
        needs_gpu, arguments = LESSONS[lesson]
        if needs_gpu and not gpu:
            results[lesson] = {"skipped": f"needs a CUDA GPU: {reason}"}
            continue
        print(f"measuring {lesson} ...", flush=True)
        module = importlib.import_module(f"demos.lessons.{lesson}")
        results[lesson] = module.run(**arguments(repeats, numpy_n))
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
