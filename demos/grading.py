"""Helpers for the nbgrader assignments in ``solutions/`` and ``exercises/``.

The assignments must grade the same way on an instructor's laptop without a
GPU and on a GPU node. The notebooks therefore never pick NumPy or CuPy, or a
real or simulated device, themselves: they ask this module, which answers
"CuPy and the real GPUs" where they are usable and "NumPy and simulated
devices" everywhere else. Importing :mod:`demos` (done here) switches Numba to
its CUDA simulator when there is no GPU.

It also holds the nbgrader preprocessor that keeps hidden tests out of the
feedback students receive (see ``nbgrader_config.py``).
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np

import demos  # noqa: F401  (enables the CUDA simulator when there is no GPU)
from demos import hardware

#: How many devices the CPU stand-in offers when there is no GPU: enough that
#: splitting work over "several devices" is a real split.
SIMULATED_DEVICE_COUNT = 3


def array_module() -> ModuleType:
    """``cupy`` when it can use a GPU, else ``numpy``: the module for new arrays."""
    return hardware.require_cupy("grading") if hardware.cupy_available() else np


def get_array_module(*arrays: Any) -> ModuleType:
    """Like ``cupy.get_array_module``, but works (answering NumPy) without CuPy."""
    try:
        import cupy
    except Exception:  # not installed, or a broken CUDA install
        return np
    return cupy.get_array_module(*arrays)


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array (for comparing with a reference)."""
    if hasattr(array, "get") and not isinstance(array, np.ndarray):
        return array.get()
    return np.asarray(array)


class SimulatedDevice:
    """A CPU stand-in for one GPU, following the CUDA rule that matters here.

    With CuPy, ``with cupy.cuda.Device(i):`` makes device *i* current and new
    arrays are allocated there. This stand-in enforces the same discipline:
    :meth:`asarray` fails unless this device is current, and it remembers what
    it received, so a grader can check each chunk went to its own device.
    """

    xp = np
    _current: "SimulatedDevice | None" = None

    def __init__(self, index: int) -> None:
        self.index = index
        self.received: list[np.ndarray] = []
        self._previous: SimulatedDevice | None = None

    def __repr__(self) -> str:
        return f"SimulatedDevice({self.index})"

    def __enter__(self) -> "SimulatedDevice":
        self._previous = SimulatedDevice._current
        SimulatedDevice._current = self
        return self

    def __exit__(self, *exc: object) -> None:
        SimulatedDevice._current = self._previous

    def asarray(self, host_array: Any) -> np.ndarray:
        """Copy *host_array* to this device; only allowed while it is current."""
        if SimulatedDevice._current is not self:
            current = SimulatedDevice._current
            raise RuntimeError(
                f"copying to device {self.index} while "
                f"{'no device' if current is None else f'device {current.index}'} is current: "
                f"use 'with device:' around the work for that device"
            )
        array = np.array(host_array, copy=True)
        self.received.append(array)
        return array

    def asnumpy(self, array: Any) -> np.ndarray:
        """Copy a result back to the host."""
        return np.array(array, copy=True)


class GpuDevice:
    """One real GPU through CuPy, with the same interface as :class:`SimulatedDevice`."""

    def __init__(self, index: int) -> None:
        self.cupy = hardware.require_cupy("GpuDevice")
        self.xp = self.cupy
        self.index = index
        self._device = self.cupy.cuda.Device(index)
        self.received: list[Any] = []

    def __repr__(self) -> str:
        return f"GpuDevice({self.index})"

    def __enter__(self) -> "GpuDevice":
        self._device.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._device.__exit__(*exc)

    def asarray(self, host_array: Any) -> Any:
        """Copy *host_array* to this GPU; only allowed while it is the current device."""
        current = self.cupy.cuda.runtime.getDevice()
        if current != self.index:
            raise RuntimeError(
                f"copying to device {self.index} while device {current} is current: "
                f"use 'with device:' around the work for that device"
            )
        array = self.cupy.asarray(host_array)
        self.received.append(array)
        return array

    def asnumpy(self, array: Any) -> np.ndarray:
        return self.cupy.asnumpy(array)


def devices() -> list[SimulatedDevice] | list[GpuDevice]:
    """All GPUs (through CuPy) when usable, else :data:`SIMULATED_DEVICE_COUNT` stand-ins."""
    if hardware.cupy_available():
        return [GpuDevice(i) for i in range(hardware.gpu_count())]
    return [SimulatedDevice(i) for i in range(SIMULATED_DEVICE_COUNT)]


@functools.lru_cache(maxsize=1)
def _feedback_preprocessor() -> type:
    # Built on first use: importing nbgrader in every assignment notebook would be slow.
    from nbgrader.preprocessors import ClearHiddenTests

    class FeedbackWithoutHiddenTests(ClearHiddenTests):
        """Remove hidden tests from the feedback, including from error tracebacks.

        nbgrader's feedback is the autograded notebook, which contains the hidden
        tests; its own ``ClearHiddenTests`` removes their source, but a failing
        hidden assertion's traceback would still quote it. For cells that had
        hidden tests we keep only the error's name and message.
        """

        def preprocess_cell(self, cell, resources, cell_index):  # type: ignore[override]
            if cell.cell_type == "code" and self._remove_hidden_test_region(cell):
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        output["traceback"] = [
                            f"{output.get('ename', 'Error')}: {output.get('evalue', '')}",
                            "(the traceback is not shown because this cell has hidden tests)",
                        ]
            return cell, resources

    FeedbackWithoutHiddenTests.__module__ = __name__
    return FeedbackWithoutHiddenTests


def __getattr__(name: str) -> Any:
    """``FeedbackWithoutHiddenTests`` (the nbgrader preprocessor) is made on first access."""
    if name == "FeedbackWithoutHiddenTests":
        return _feedback_preprocessor()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
