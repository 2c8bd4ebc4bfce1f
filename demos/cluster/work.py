"""The chapter 6 examples cut into parts that any process on any node can compute.

A part is described by a few numbers, ``(problem, part, parts)``, and each
process makes its own input from them: the sum's values come from their index,
the mat-vec's rows from a formula of (row, column), the Lorenz parameters from
a seeded generator. So nothing big crosses the network on the way in, only the
results come back, and every split gives the answer one node gives. The same
functions serve Dask workers (:mod:`.dask_jobs`) and MPI ranks (:mod:`.mpi_ranks`).

On a GPU the part runs through the course's own one-GPU code
(:func:`demos.multigpu.workload.sum_of_squares`, :func:`demos.multigpu.matvec.matvec`,
:func:`demos.multigpu.lorenz.lorenz_gpu`); without one, through NumPy or Numba on
the CPU. :func:`pin_to_gpu` gives each process of a node its own GPU first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from typing import Any

import numpy as np

from demos.multigpu.process_pool import VISIBLE_ENV
from demos.multigpu.splitting import split_ranges

EXAMPLES = ("sum", "matvec", "lorenz")
#: Sizes that take seconds on a CPU; on GPUs, --size and --columns give the chapter's.
DEFAULT_SIZE = {"sum": 10_000_000, "matvec": 4_000, "lorenz": 20_000}
DEFAULT_COLUMNS = 20_000
DEFAULT_STEPS = 1_000
LORENZ_DT = 0.001
_BLOCK_ELEMENTS = 4_000_000  # matvec rows are made in blocks of about this many entries
# float32 GPU/Numba results against the float64 NumPy reference
MATVEC_RTOL = 1e-4
LORENZ_ATOL = 2e-3  # as tests/demos/multigpu/test_multigpu_gpu.py allows after 1000 steps


@dataclass(frozen=True)
class Problem:
    """One example at one size: *size* elements (sum), rows (matvec) or trajectories (lorenz)."""

    example: str
    size: int
    columns: int = DEFAULT_COLUMNS  # matvec: length of x
    steps: int = DEFAULT_STEPS  # lorenz: RK4 steps of LORENZ_DT
    seed: int = 0  # lorenz: the parameter draw

    def __post_init__(self) -> None:
        if self.example not in EXAMPLES:
            raise ValueError(f"example must be one of {', '.join(EXAMPLES)}, not {self.example!r}")
        for name in ("size", "columns"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, not {self.steps}")

    @classmethod
    def default(cls, example: str, size: int | None = None, **options: int) -> Problem:
        return cls(example, size or DEFAULT_SIZE.get(example, 0), **options)

    def describe(self) -> str:
        if self.example == "sum":
            return f"sum of squares of {self.size:,} values"
        if self.example == "matvec":
            return f"mat-vec, A {self.size:,} x {self.columns:,} float32, split by rows"
        return f"Lorenz ensemble, {self.size:,} trajectories x {self.steps:,} RK4 steps"


# ------------------------------------------------------------------ one GPU per process
def _listed_gpus() -> list[str]:
    """This process's GPUs as ``CUDA_VISIBLE_DEVICES`` entries, found without starting CUDA.

    CUDA reads the variable once, when it starts in a process, so this must not
    ask CUDA itself: the scheduler's variable is read, or ``nvidia-smi -L``
    counts the GPUs where it is unset.
    """
    listed = os.environ.get(VISIBLE_ENV)
    if listed is not None:
        return [e.strip() for e in listed.split(",") if e.strip()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(out.splitlines()) if line.startswith("GPU ")]


def pin_to_gpu(slot: int, listed: list[str] | None = None) -> str | None:
    """Let this process see only GPU number *slot* of the node's list; the entry, or None.

    *slot* is the process's place among those of its job or node (a Dask worker's
    index in its job, an MPI rank's node-local rank). With one GPU or none
    listed, nothing changes. Must run before anything in the process starts CUDA.
    """
    listed = _listed_gpus() if listed is None else listed
    if len(listed) <= 1:
        return listed[0] if listed else None
    if not 0 <= slot < len(listed):
        raise ValueError(
            f"process {slot} of this node, but only {len(listed)} GPUs are listed "
            f"({VISIBLE_ENV}={','.join(listed)}): one GPU per process; start fewer processes "
            "per node"
        )
    os.environ[VISIBLE_ENV] = listed[slot]
    return listed[slot]


def _on_gpu() -> bool:
    from demos import hardware

    return hardware.cupy_available()


def _gpu_name() -> str:
    from demos import hardware

    return hardware.gpus()[0].name


def _empty(problem: Problem) -> np.ndarray:
    """The result of a part with no rows: no mat-vec entries, no trajectories."""
    return np.empty((0,) if problem.example == "matvec" else (0, 3), dtype=np.float32)


# ------------------------------------------------------------------ the inputs
def matrix_rows(start: int, stop: int, columns: int) -> np.ndarray:
    """Rows ``start:stop`` of the mat-vec's A, float32, values in [0, 1] (no cancellation).

    Made a block of rows at a time, so that the float64 arithmetic behind each
    entry never needs more than a small multiple of the float32 slab's memory.
    """
    out = np.empty((stop - start, columns), dtype=np.float32)
    j = 7e-4 * np.arange(columns, dtype=np.float64)
    step = max(1, _BLOCK_ELEMENTS // max(columns, 1))
    for first in range(start, stop, step):
        i = 1e-3 * np.arange(first, min(first + step, stop), dtype=np.float64)
        out[first - start : first - start + len(i)] = 0.5 + 0.5 * np.sin(i[:, None] + j)
    return out


def vector(columns: int) -> np.ndarray:
    """The mat-vec's x, float32, values in [0, 1]."""
    return (0.5 + 0.5 * np.cos(1.3e-3 * np.arange(columns))).astype(np.float32)


# ------------------------------------------------------------------ one part, anywhere
def run_part(
    problem: Problem, part: int, parts: int, gpu_slot: int | None = None
) -> dict[str, Any]:
    """Compute part *part* of *parts* on this process's GPU (or CPU); a report with the value.

    With *gpu_slot* (a worker's or rank's place on its node), the process is
    first pinned to that GPU; without, it uses whatever it sees (a notebook).
    The report says where it ran (host, Slurm/LSF job, ``CUDA_VISIBLE_DEVICES``,
    GPU or CPU), which elements it did, and holds the partial result in ``value``.
    """
    if gpu_slot is not None:
        pin_to_gpu(gpu_slot)
    rows = split_ranges(problem.size, parts)[part]
    gpu = _on_gpu()
    if rows.start == rows.stop:  # more parts than work: nothing to launch
        value: Any = 0.0 if problem.example == "sum" else _empty(problem)
    elif problem.example == "sum":
        from demos.multigpu.workload import sum_of_squares

        value = sum_of_squares(rows.start, rows.stop)["sum"]
    elif problem.example == "matvec":
        from demos.multigpu.matvec import matvec

        value = matvec(matrix_rows(rows.start, rows.stop, problem.columns), vector(problem.columns))
    else:
        from demos.multigpu import lorenz

        u0, params = lorenz.ensemble_problem(problem.size, problem.seed)
        integrate = lorenz.lorenz_gpu if gpu else lorenz.lorenz_cpu
        value = integrate(u0[rows], params[rows], LORENZ_DT, problem.steps)
    return {
        "part": part,
        "parts": parts,
        "elements": (rows.start, rows.stop),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "job": os.environ.get("SLURM_JOB_ID") or os.environ.get("LSB_JOBID"),
        "visible": os.environ.get(VISIBLE_ENV),
        "where": f"GPU {_gpu_name()}" if gpu else "CPU",
        "value": value,
    }


def combine(problem: Problem, reports: list[dict[str, Any]]) -> Any:
    """The whole answer from the parts' reports (in any order)."""
    values = [r["value"] for r in sorted(reports, key=lambda r: r["part"])]
    if problem.example == "sum":
        return float(sum(values))
    return np.concatenate(values)


def one_node(problem: Problem) -> Any:
    """The answer one process computes in NumPy (float64), to check a cluster's against."""
    if problem.example == "sum":
        from demos.multigpu.workload import reference

        return reference(problem.size)
    if problem.example == "matvec":
        x = vector(problem.columns).astype(np.float64)
        blocks = split_ranges(
            problem.size, max(1, problem.size * problem.columns // _BLOCK_ELEMENTS)
        )
        return np.concatenate(
            [matrix_rows(b.start, b.stop, problem.columns).astype(np.float64) @ x for b in blocks]
        )
    from demos.multigpu import lorenz

    u0, params = lorenz.ensemble_problem(problem.size, problem.seed)
    return lorenz.lorenz_numpy(u0, params, LORENZ_DT, problem.steps)


def compare_with_one_node(
    problem: Problem, result: Any, expected: Any | None = None
) -> tuple[bool, str]:
    """(agrees, one line) comparing a cluster's *result* with the one-node NumPy answer."""
    expected = one_node(problem) if expected is None else expected
    if problem.example == "sum":
        ok = bool(np.isclose(result, expected, rtol=1e-9))
        return ok, f"total {result:,.6f}; one node (NumPy) {expected:,.6f}"
    result = np.asarray(result)
    if result.shape != expected.shape:
        return False, f"shape {result.shape}, but one node gives {expected.shape}"
    if problem.example == "matvec":
        error = float(np.max(np.abs(result - expected) / np.abs(expected)))
        return error <= MATVEC_RTOL, f"largest relative error against one node (NumPy): {error:.1e}"
    error = float(np.max(np.abs(result - expected)))
    return error <= LORENZ_ATOL, f"largest difference from one node (NumPy, float64): {error:.1e}"


def describe_report(report: dict[str, Any]) -> str:
    """One line per part: where it ran and what it did."""
    start, stop = report["elements"]
    job = f", job {report['job']}" if report["job"] else ""
    return (
        f"part {report['part'] + 1}/{report['parts']} on {report['host']}{job}, "
        f"pid {report['pid']}, {VISIBLE_ENV}={report['visible']}, {report['where']}: "
        f"elements {start:,}:{stop:,}"
    )


def add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both launchers share: which example, how big."""
    parser.add_argument(
        "--example",
        nargs="+",
        choices=(*EXAMPLES, "all"),
        default=["all"],
        help="which chapter 6 examples to run (default: all three)",
    )
    parser.add_argument(
        "--size",
        type=int,
        default=None,
        help="elements (sum), rows (matvec) or trajectories (lorenz); default: "
        + ", ".join(f"{k} {v:,}" for k, v in DEFAULT_SIZE.items()),
    )
    parser.add_argument("--columns", type=int, default=DEFAULT_COLUMNS, help="matvec: columns of A")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="lorenz: RK4 steps")


def problems_from(args: argparse.Namespace) -> list[Problem]:
    """The problems the shared options ask for."""
    examples = EXAMPLES if "all" in args.example else tuple(dict.fromkeys(args.example))
    return [Problem.default(e, args.size, columns=args.columns, steps=args.steps) for e in examples]
