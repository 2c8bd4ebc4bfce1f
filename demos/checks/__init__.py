"""Immediate feedback for the "your turn" cells of the chapters.

A chapter cell asks the student to write a function or kernel; the next cell
runs ``check("name", what_they_wrote)``, which tries it on inputs chosen to
catch the usual mistakes and prints one line: a tick, or what went wrong
(which size, which index, which dtype, a write out of bounds). A check never
raises, so a notebook with unfinished cells still runs top to bottom.
``show_answer("name")`` prints the model answer, kept once, in
``demos/checks/answers/<name>.py``; the tests run every check against it.
A later cell that runs what the student wrote takes it through
``use_if_passed("name", what_they_wrote)``: the course's version until it passes.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from demos.checks import (
    array_checks,
    cnn_checks,
    device_memory_checks,
    inflight_checks,
    kernel_checks,
    multigpu_checks,
    pattern_checks,
    profiling_checks,
    simt_checks,
)
from demos.checks._harness import run_check

ANSWERS_DIR = Path(__file__).resolve().parent / "answers"

# name -> (chapter, check); the name is also the function's name in the notebook
CHECKS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "blocks_for": ("02", simt_checks.blocks_for),
    "add_to_kernel": ("02", simt_checks.add_to_kernel),
    "add_matrices_kernel": ("02", simt_checks.add_matrices_kernel),
    "warp_cost": ("02", simt_checks.warp_cost),
    "row_norms": ("03", array_checks.row_norms),
    "distance_matrix": ("03", array_checks.distance_matrix),
    "nearest_neighbour": ("03", array_checks.nearest_neighbour),
    "distance_matrix_chunked": ("03", array_checks.distance_matrix_chunked),
    "combine_kernel": ("03", array_checks.combine_kernel),
    "naive_distance_kernel": ("04", kernel_checks.naive_distance_kernel),
    "coalesced_grid": ("04", kernel_checks.coalesced_grid),
    "coalesced_distance_kernel": ("04", kernel_checks.coalesced_distance_kernel),
    "distance_on_device": ("04", device_memory_checks.distance_on_device),
    "tiled_distance_kernel": ("04", kernel_checks.tiled_distance_kernel),
    "block_sum_kernel": ("04", kernel_checks.block_sum_kernel),
    "sync_free_total": ("04a", profiling_checks.sync_free_total),
    "busy_fraction": ("04a", profiling_checks.busy_fraction),
    "pipelined_time": ("04a", profiling_checks.pipelined_time),
    "histogram_atomic": ("04b", pattern_checks.histogram_atomic),
    "histogram_shared": ("04b", pattern_checks.histogram_shared),
    "warp_sum": ("04b", pattern_checks.warp_sum),
    "wide_sum": ("04b", inflight_checks.wide_sum),
    "tiled_matmul": ("04b", pattern_checks.tiled_matmul),
    "batch_trial": ("05", cnn_checks.batch_trial),
    "split_ranges": ("06", multigpu_checks.split_ranges),
    "matvec_split": ("06", multigpu_checks.matvec_split),
    "split_sum": ("06", multigpu_checks.split_sum),
}

__all__ = [
    "CHECKS",
    "answer_source",
    "check",
    "course_version",
    "passes",
    "show_answer",
    "use_if_passed",
]


def passes(name: str, student: Any) -> bool:
    """Try the student's *name* (a function or kernel), print one line of feedback, return
    success."""
    if name not in CHECKS:
        raise ValueError(f"no check named {name!r}; known: {', '.join(CHECKS)}")
    return run_check(name, lambda: CHECKS[name][1](student))


def check(name: str, student: Any) -> None:
    """Like :func:`passes`, for a notebook cell: prints the verdict and leaves nothing else on
    screen."""
    passes(name, student)


def answer_source(name: str) -> str:
    """The model answer for *name*, as source text."""
    path = ANSWERS_DIR / f"{name}.py"
    if name not in CHECKS or not path.exists():
        raise ValueError(f"no model answer named {name!r}; known: {', '.join(CHECKS)}")
    return path.read_text(encoding="utf-8")


def show_answer(name: str) -> None:
    """Print the model answer for *name*. Try first: the check tells you what to fix."""
    print(answer_source(name))


def course_version(name: str) -> Any:
    """The course's model answer for *name* (a function or kernel), compiled from its source."""
    namespace: dict[str, Any] = {}
    exec(compile(answer_source(name), f"<course answer {name}>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def use_if_passed(name: str, student: Any) -> Any:
    """The student's *name* when it passes its check, else the course's version, saying so.

    A later cell that runs what the student wrote (a kernel timed on the GPU, a
    model of a pipeline) would otherwise print a wrong figure without a word.
    """
    with contextlib.redirect_stdout(io.StringIO()):
        ok = passes(name, student)
    if ok:
        print(f"Using your {name} (it passed its check).")
        return student
    print(
        f"Your {name} has not passed its check yet, so this cell uses the course's version "
        f'(show_answer("{name}") prints it).'
    )
    return course_version(name)
