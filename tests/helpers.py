"""Helpers shared by the test modules: reference checks, free ports, MPI runs, skip conditions.

Imported as ``from helpers import ...`` (pytest puts ``tests/`` on the path).
The distance reference itself lives in :mod:`demos.distance.reference`, so that
the benchmarks check against the same formula as the tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from demos import hardware
from demos.distance.reference import reference_distance, tolerance
from demos.kernel_testing import to_host

ROOT = Path(__file__).resolve().parent.parent

__all__ = [
    "ROOT",
    "assert_distances",
    "free_port",
    "http_status",
    "instructor_tools",
    "needs_chromium",
    "needs_commands",
    "needs_course_venv",
    "needs_local_slurm",
    "needs_root",
    "on_cuda",
    "random_points",
    "reference_distance",
    "run_mpirun",
    "solve_exercise",
    "to_host",
]

# Skip conditions shared by several test modules. The GPU ones are markers
# (gpu, multigpu, nogpu) that tests/conftest.py turns into skips.
on_cuda = pytest.mark.skipif(
    not (hardware.simulator_enabled() or hardware.has_gpu()),
    reason="needs a CUDA GPU or the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)",
)
needs_course_venv = pytest.mark.skipif(
    not (ROOT / ".venv" / ".course-install-stamp").exists(),
    reason="runs where ./course.sh has installed .venv (as `./course.sh test` does)",
)
instructor_tools = pytest.mark.skipif(
    not (ROOT / "tools" / "gpu-node").is_dir(),
    reason="tools/gpu-node is the instructor's (not in the student edition)",
)


def needs_commands(*names: str, install: str) -> pytest.MarkDecorator:
    """Skip unless every command in *names* is on PATH; *install* says how to get them."""
    missing = [name for name in names if shutil.which(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {' and '.join(missing)}: {install}")


def needs_root(why: str) -> pytest.MarkDecorator:
    """Skip unless the tests run as root; *why* says what needs it."""
    return pytest.mark.skipif(os.geteuid() != 0, reason=f"needs root {why}")


def needs_local_slurm() -> None:
    """Skip the calling test or fixture unless tests/slurm's one-machine Slurm can start here."""
    from local_cluster import missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.skip(f"no local Slurm: {missing}")


needs_chromium = needs_commands(
    "chromium",
    "chromedriver",
    install="Debian's chromium and chromium-driver (.ci/run installs them)",
)


def random_points(rng: np.random.Generator, n: int, dtype: Any, d: int = 3) -> np.ndarray:
    """*n* points in the unit cube with *d* coordinates, in *dtype*."""
    return rng.random((n, d)).astype(dtype)


def assert_distances(result: Any, x: np.ndarray, y: np.ndarray | None = None) -> None:
    """*result* (any array library) is the distance matrix of *x* and *y*, in x's dtype."""
    result = to_host(result)
    expected = reference_distance(x, y)
    assert result.shape == expected.shape
    assert result.dtype == x.dtype
    rtol, atol = tolerance(x.dtype)
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=rtol, atol=atol)


def notebook_cell(source: str, name: str) -> Any:
    """*name* as a chapter's cell defines it: *source* run after the setup cell's imports
    (numpy as np, numba's cuda), not imported from ``demos``, as a student's cell makes it."""
    namespace: dict[str, object] = {}
    exec("import numpy as np\nfrom numba import cuda", namespace)  # noqa: S102
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - answers and test cases
    return namespace[name]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url: str) -> int:
    """The HTTP status code of a GET of *url* (an error status is returned, not raised)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def solution_answers(assignment: str) -> dict[str, str]:
    """The answer of every solution cell of *assignment* (markers removed), by grade id."""
    source = json.loads((ROOT / "solutions" / assignment / f"{assignment}.ipynb").read_text())
    return {
        c["metadata"]["nbgrader"]["grade_id"]: re.sub(
            r" *### (BEGIN|END) SOLUTION\n", "", "".join(c["source"])
        )
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }


def solve_exercise(exercise: Path, assignment: str) -> None:
    """Fill a student's notebook with the instructor's solutions (markers removed)."""
    answers = solution_answers(assignment)
    nb = json.loads(exercise.read_text())
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    exercise.write_text(json.dumps(nb, indent=1))


def run_mpirun(*args: str, ranks: int = 2, timeout: float = 120) -> subprocess.CompletedProcess:
    """``mpirun -n RANKS python ARGS...``; skips the test where mpi4py or mpirun is missing."""
    pytest.importorskip("mpi4py")
    mpirun = shutil.which("mpirun") or shutil.which("mpirun", path=os.path.dirname(sys.executable))
    if mpirun is None:
        pytest.skip("no mpirun on PATH (install the 'mpi' extra)")
    # Open MPI refuses to run as root unless told; containers often run tests as root.
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    command = [mpirun, "-n", str(ranks), sys.executable, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of an import *graph* (module -> the modules it imports) as a path, its first
    node repeated at the end, or None; shared by the demos and grader layout tests."""
    state: dict[str, str] = {}

    def visit(node: str, trail: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return trail[trail.index(target) :] + [target]
            if target not in state and (found := visit(target, [*trail, target])):
                return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None
