"""Helpers for the nbgrader assignments in ``solutions/`` and ``exercises/``.

The assignments must give a submission the same score on an instructor's
laptop without a GPU and on a GPU node. The notebooks therefore never pick
NumPy or CuPy, or a real or simulated device, themselves: they ask this
package, which answers "CuPy and the real GPUs" where they are usable and
"a CuPy-like stand-in and simulated devices" everywhere else, with the same
rules on both (see :mod:`.standin` and :mod:`.devices`). Importing :mod:`demos`
(done here) switches Numba to its CUDA simulator when there is no GPU.

Visible tests are built from :mod:`.checks` (seeded inputs, generic failure
messages) and :mod:`.watch` (what the student's code launched and called).
Hidden tests do not run here at all: the grader runs them in its own process
(``grader.verdicts``) and asks this kernel, through :mod:`.serve`, only to run
the student's code on its inputs and answer with plain data (:mod:`.wire`).
Importing this package also silences Numba's warnings (performance advice): a
correct answer should not print to stderr when the student validates.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

import demos  # noqa: F401  (enables the CUDA simulator when there is no GPU)
from demos import hardware
from demos.distance.reference import reference_distance as reference_distances
from demos.grading import standin
from demos.grading.checks import GradingFailure, assert_close, assert_equal, check, rng, seed_for
from demos.grading.devices import (
    SIMULATED_DEVICE_COUNT,
    DeviceLog,
    GpuDevice,
    SimulatedDevice,
    devices,
)
from demos.grading.watch import (
    GuardedOutput,
    Launch,
    Watched,
    is_course_code,
    uses_course_code,
    watch,
)
from demos.numba_advice import silence_advice

__all__ = [
    "SIMULATED_DEVICE_COUNT",
    "DeviceLog",
    "GpuDevice",
    "GradingFailure",
    "GuardedOutput",
    "Launch",
    "SimulatedDevice",
    "Watched",
    "array_module",
    "assert_close",
    "assert_equal",
    "check",
    "device_array_module",
    "devices",
    "get_array_module",
    "is_course_code",
    "reference_distances",
    "rng",
    "seed_for",
    "standin",
    "to_numpy",
    "uses_course_code",
    "watch",
]


# "Grid size ... low occupancy" and the like are advice printed to stderr; in a
# graded cell that would cost all its points, on a GPU grader as well as in the simulator.
silence_advice()


def array_module() -> ModuleType:
    """``cupy`` when it can use a GPU, else ``numpy``: the module for new host-side arrays."""
    return hardware.require_cupy("grading") if hardware.cupy_available() else np


def device_array_module() -> ModuleType:
    """``cupy`` when it can use a GPU, else the CuPy-like stand-in: "GPU arrays" for tests.

    Tests that hand GPU arrays to student code use this, so they run, and count,
    on every grader.
    """
    return hardware.require_cupy("grading") if hardware.cupy_available() else standin.module


def get_array_module(*arrays: Any) -> ModuleType:
    """Like ``cupy.get_array_module``, also for stand-in arrays and without CuPy."""
    if any(isinstance(a, standin.DeviceArray) for a in arrays):
        return standin.module
    try:
        import cupy
    except Exception:  # noqa: BLE001  (not installed, or a broken CUDA install: either way NumPy)
        return np
    return cupy.get_array_module(*arrays)


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy copy of a NumPy, CuPy or stand-in array (for comparing with a reference)."""
    if hasattr(array, "get") and not isinstance(array, np.ndarray):
        return array.get()
    return np.asarray(array)
