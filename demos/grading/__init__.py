"""Helpers for the nbgrader assignments in ``solutions/`` and ``exercises/``.

The assignments must give a submission the same score on an instructor's
laptop without a GPU and on a GPU node. The notebooks therefore never pick
NumPy or CuPy, or a real or simulated device, themselves: they ask this
package, which answers "CuPy and the real GPUs" where they are usable and
"a CuPy-like stand-in and simulated devices" everywhere else, with the same
rules on both (see :mod:`demos.cupy_standin` and :mod:`.devices`). Importing
:mod:`demos` (done here) switches Numba to its CUDA simulator when there is no GPU.

Visible tests are built from :mod:`.visible` (seeded inputs, generic failure
messages) and :mod:`.watch` (what the student's code launched and called).
Hidden tests do not run here at all: the grader runs them in its own process
(``grader.verdicts``) and asks this kernel, through :mod:`.serve`, only to run
the student's code on its inputs and answer with plain data (:mod:`.wire`).
Importing this package changes nothing else: the grader's own process imports
:mod:`.wire` and must keep its warning filters. Numba's performance advice,
which on stderr would cost a graded cell its points, is silenced where a
student's kernels are about to run (:func:`rng`, :class:`GuardedOutput`,
:func:`watch`, :func:`.serve.handle`). The mechanics shared with the chapters'
checks (guarded outputs, copies to the host, array modules, comparisons) are
in :mod:`demos.kernel_testing`; :func:`is_course_kernel` tells the course's own
pattern kernels from a student's.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

import demos  # noqa: F401  (enables the CUDA simulator when there is no GPU)
from demos import cupy_standin, hardware
from demos.distance.reference import reference_distance as reference_distances
from demos.grading.course_kernels import is_course_kernel
from demos.grading.devices import (
    SIMULATED_DEVICE_COUNT,
    DeviceLog,
    GpuDevice,
    SimulatedDevice,
    devices,
)
from demos.grading.visible import GradingFailure, assert_close, assert_equal, expect, rng, seed_for
from demos.grading.watch import (
    GuardedOutput,
    Launch,
    Watched,
    is_course_code,
    uses_course_code,
    watch,
)
from demos.kernel_testing import get_array_module
from demos.kernel_testing import to_host as to_numpy

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
    "device_array_module",
    "devices",
    "expect",
    "get_array_module",
    "is_course_code",
    "is_course_kernel",
    "reference_distances",
    "rng",
    "seed_for",
    "to_numpy",
    "uses_course_code",
    "watch",
]


def array_module() -> ModuleType:
    """``cupy`` when it can use a GPU, else ``numpy``: the module for new host-side arrays."""
    return hardware.require_cupy("grading") if hardware.cupy_available() else np


def device_array_module() -> ModuleType:
    """``cupy`` when it can use a GPU, else the CuPy-like stand-in: "GPU arrays" for tests.

    Tests that hand GPU arrays to student code use this, so they run, and count,
    on every grader.
    """
    return hardware.require_cupy("grading") if hardware.cupy_available() else cupy_standin.module
