"""Time limits per cell, from how long the instructor's own solution takes there.

One limit for every cell (nbgrader's ``Execute.timeout``) must cover the
slowest honest cell of any assignment, so a student's endless loop in a quick
cell holds a grading worker for that whole time: with a class of 200, a few
such notebooks decide when the run ends. ``python -m grader autograde`` runs
the solution once per assignment (cached until the solution changes), times
each graded and answer cell, and gives every notebook's cell of that id
:func:`budget` seconds: a generous multiple of the solution's time with a
floor, so a slower machine or a busy one never stops an honest answer. A
cell of the student's own (no id) gets the median of the solution's limits.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

import nbformat

from grader.sandbox.environment import compiled_kernels_environment

#: No cell is given less than this (seconds): start-up costs, a busy machine.
FLOOR_SECONDS = 10
#: A cell may take this many times what the solution took there...
FACTOR = 6
#: ...plus this much.
SLACK_SECONDS = 5


def budget(solution_seconds: float, timeout: int) -> int:
    """The limit of a cell the solution ran in *solution_seconds*; never above *timeout*."""
    return min(timeout, max(FLOOR_SECONDS, math.ceil(FACTOR * solution_seconds + SLACK_SECONDS)))


def _seconds(cell: nbformat.NotebookNode) -> float | None:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    elapsed = _instant(end) - _instant(start)
    return max(0.0, elapsed.total_seconds())


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def measure(
    solution: Path,
    timeout: int,
    environment: dict[str, str] | None = None,
    kernel_cache: Path | None = None,
) -> dict[str, float]:
    """Seconds the solution notebook spends in each cell with a grade id (run here, now).

    Only what the kernel runs when grading is timed: the hidden tests are left
    out. The kernel gets *environment* on top of this process's (the
    notebooks' share of the cores, their GPUs or none), so that it compiles as
    they will; CuPy and JAX keep what they compile in *kernel_cache*.
    """
    from jupyter_client import KernelManager
    from nbclient import NotebookClient

    from grader.verdicts.hidden_tests import split_hidden

    nb = nbformat.read(solution, as_version=4)
    for cell in nb.cells:  # hidden tests run in the grader, not in a kernel
        if cell.cell_type == "code":
            cell.source = split_hidden(cell.source)[0]
    folder = tempfile.mkdtemp(prefix="cell-budgets-")
    kernel = KernelManager(transport="ipc", ip=str(Path(folder) / "kernel"))  # no TCP port
    client = NotebookClient(
        nb,
        km=kernel,
        timeout=timeout,
        record_timing=True,
        allow_errors=True,
        resources={"metadata": {"path": str(solution.parent)}},
    )
    env = dict(os.environ) | (environment or {})
    if kernel_cache is not None:
        env |= compiled_kernels_environment(str(kernel_cache))
    try:
        client.execute(env=env)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    times = {}
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        seconds = _seconds(cell) if cell.cell_type == "code" else None
        if grade_id and seconds is not None:
            times[grade_id] = seconds
    return times


def budgets_file(
    course: Path,
    assignment: str,
    work: Path,
    timeout: int,
    environment: dict[str, str] | None = None,
) -> Path | None:
    """A JSON file of the limits for *assignment*, measured once per solution version.

    It also names the folder of GPU kernels CuPy compiled for the solution
    and JAX (``kernel_cache``): each notebook's sandbox starts with a copy of it
    (:func:`grader.sandbox.box.open_box`), so a notebook compiles only what the
    solution did not, and nothing of another student's reaches it.
    ``None`` (every cell keeps *timeout*) when the solution cannot be run here.
    """
    solution = course / "solutions" / assignment / f"{assignment}.ipynb"
    if not solution.is_file():
        return None
    digest = hashlib.sha256(solution.read_bytes()).hexdigest()[:16]
    # the notebooks' environment decides what is compiled, and how fast
    setting = hashlib.sha256(json.dumps(environment or {}, sort_keys=True).encode()).hexdigest()
    name = f"cell-budgets-{digest}-{setting[:8]}"
    target, kernel_cache = work / f"{name}.json", work / f"{name}-kernels"
    if not target.is_file():
        shutil.rmtree(kernel_cache, ignore_errors=True)
        kernel_cache.mkdir(mode=0o700, parents=True)
        try:
            times = measure(solution, timeout, environment, kernel_cache)
        except Exception as error:  # noqa: BLE001  (the solution failing here only costs speed)
            print(
                f"grader: cell limits not measured ({type(error).__name__}); "
                f"every cell gets {timeout} s"
            )
            return None
        limits = {grade_id: budget(seconds, timeout) for grade_id, seconds in times.items()}
        record = {"solution_seconds": times, "limits": limits, "kernel_cache": str(kernel_cache)}
        target.write_text(json.dumps(record, indent=1))
    return target


def load_kernel_cache(path: str) -> Path | None:
    """The compiled-kernel folder of a file :func:`budgets_file` wrote, if it has one."""
    if not path:
        return None
    folder = json.loads(Path(path).read_text()).get("kernel_cache")
    return Path(folder) if folder and Path(folder).is_dir() else None


def load_limits(path: str) -> dict[str, int]:
    """The ``limits`` of a file :func:`budgets_file` wrote (empty when *path* is empty)."""
    if not path:
        return {}
    return {str(k): int(v) for k, v in json.loads(Path(path).read_text())["limits"].items()}


def solution_seconds(path: Path | None) -> float | None:
    """The solution's seconds in its graded and answer cells together, from *path*; None: unknown.

    What a correct notebook of the assignment costs in its kernel, before
    start-up and hidden tests: :mod:`grader.run.batch` starts the most costly classes first.
    """
    if path is None or not Path(path).is_file():
        return None
    times = json.loads(Path(path).read_text()).get("solution_seconds") or {}
    return float(sum(times.values())) if times else None
