"""What every chapter notebook needs before its first lesson, in one import.

A chapter starts with ``from demos.notebook import setup; env = setup()``. That
one line silences TensorFlow's and absl's start-up noise (it must happen before
TensorFlow is first imported, which is why it lives here and not in chapter 5),
switches Numba to its CUDA simulator when there is no GPU (by importing
:mod:`demos`), hides Numba's performance advice (the chapters launch small
grids and pass host arrays on purpose, and each warning would be a red box on a
GPU node), prints what the machine offers, and picks problem sizes that
suit it: in the simulator every CUDA thread is a Python thread, so sizes must
stay tiny there. The reference loader, figure viewer and timer of
:mod:`demos.benchmarks.record` are re-exported so that notebooks import from
one place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# Before anything can import TensorFlow: its C++ logging and absl's warnings.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import demos  # noqa: F401  (switches Numba to the simulator when there is no GPU)
from demos import hardware
from demos.benchmarks.record import (
    load_reference,
    show_reference_figures,
    wall_times,
)
from demos.numba_advice import silence_advice

__all__ = [
    "Environment",
    "load_reference",
    "quiet_numba_advice",
    "reference_json",
    "setup",
    "show_reference_figures",
    "wall_times",
]


@dataclass(frozen=True)
class Environment:
    """What a chapter may use on this machine, and the sizes that suit it."""

    on_gpu: bool  # a real CUDA GPU is visible
    simulated: bool  # Numba CUDA kernels run in the CPU simulator
    cupy_ok: bool  # CuPy can run on a GPU here
    cupy_why: str  # one sentence on CuPy's state
    n_gpus: int
    n_kernel: int  # points for a distance kernel: tiny in the simulator
    n_elements: int  # elements for a 1-D kernel


def setup(verbose: bool = True) -> Environment:
    """Look at the machine once, print a short summary, and return what the chapter may use."""
    silence_advice()  # small launches are on purpose in every chapter: no red warning boxes
    on_gpu = hardware.has_gpu()
    simulated = hardware.simulator_enabled()
    cupy_ok, cupy_why = hardware.cupy_status()
    env = Environment(
        on_gpu=on_gpu,
        simulated=simulated,
        cupy_ok=cupy_ok,
        cupy_why=cupy_why,
        n_gpus=hardware.gpu_count(),
        n_kernel=24 if simulated else 4096,
        n_elements=100 if simulated else 10_000_000,
    )
    if verbose:
        if on_gpu:
            names = ", ".join(f"{g.name} ({g.total_memory_gib:.0f} GiB)" for g in hardware.gpus())
            print(f"GPU found: {names}")
        else:
            print(f"No GPU here: {hardware.no_gpu_reason()}")
        mode = "CUDA simulator (tiny sizes)" if simulated else "real GPU"
        print(f"Numba CUDA kernels run on the {mode}; CuPy: {cupy_why}")
    return env


def reference_json(name: str) -> Any:
    """A measured result from ``demos/results/`` (``"lessons.json"``), or None with a message."""
    return load_reference(f"results/{name}")


def distance_times(kind: str = "host_to_host") -> dict[str, dict[int, float]]:
    """Median seconds per backend and size from ``demos/results/distance.json``.

    *kind* is ``"host_to_host"`` (points in, matrix out, as a user pays) or
    ``"device"`` (GPU time alone, CUDA events). Empty when the file is missing.
    """
    data = reference_json("distance.json")
    times: dict[str, dict[int, float]] = {}
    for run in (data or {}).get("results", {}).get("runs", []):
        if kind in run:
            times.setdefault(run["backend"], {})[int(run["n"])] = run[kind]["median_s"]
    return times


def distance_transfer(n: int, direction: str = "d2h") -> float | None:
    """Seconds to copy the points in (``"h2d"``) or the matrix out (``"d2h"``) at size *n*,
    measured."""
    data = reference_json("distance.json")
    for row in (data or {}).get("results", {}).get("transfers", []):
        if int(row["n"]) == n:
            return row[direction]["median_s"]
    return None


def reference_machine(name: str = "distance.json") -> str:
    """The GPUs and CPU cores a reference result was measured on, in words."""
    data = reference_json(name)
    if data is None:
        return "(unknown machine)"
    env = data["environment"]
    gpus = ", ".join(g["name"] for g in env.get("gpus") or []) or "no GPU"
    return f"{gpus}, host with {env['cpu_count']} CPU cores"


def quiet_import(name: str) -> Any:
    """Import *name* with TensorFlow's C-level start-up noise silenced (see
    :mod:`demos.quiet_import`)."""
    from demos import quiet_import as quiet

    return quiet.quiet_import(name)


def quiet_numba_advice() -> None:
    """Hide Numba's performance advice ("Grid size ... low occupancy") for this session.

    The simulator-sized launches of a chapter are small on purpose; the advice
    would print a red warning under every cell. Errors still show.
    """
    silence_advice()
