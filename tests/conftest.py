"""Shared test set-up: the GPU markers, the array modules a check runs on, a seeded RNG.

Importing :mod:`demos` first switches Numba to the CUDA simulator on machines
without a GPU (unless NUMBA_ENABLE_CUDASIM is already set), so kernel tests run
everywhere; on a GPU machine the same tests run on the real device.

Markers (pyproject.toml lists them), each skipped here with the reason:
``gpu`` needs a CUDA GPU, ``multigpu`` two or more, ``nogpu`` checks what a
machine without a GPU does. A test that takes the ``xp`` fixture runs once per
array module: NumPy, the course's CPU stand-in for CuPy (``standin``,
:mod:`demos.cupy_standin`) and CuPy (``cupy``, marked ``gpu``), so every check
that runs on the GPU has CPU twins.
``device_xp`` is the same without NumPy, for checks of GPU-array behaviour.
Other skip conditions (commands, root, the local Slurm, the course's .venv) are in helpers.py.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from demos import hardware


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    n_gpus = hardware.gpu_count()
    no_gpu = pytest.mark.skip(reason=f"needs a CUDA GPU: {hardware.no_gpu_reason()}")
    one_gpu = pytest.mark.skip(reason=f"needs 2 or more CUDA GPUs, this machine has {n_gpus}")
    has_gpu = pytest.mark.skip(reason="checks what a machine without a GPU does; this one has one")
    gpu_here = n_gpus > 0 or hardware.cupy_available()
    for item in items:
        # Look at real markers, not item.keywords: keywords also hold
        # parametrize ids, and a case named "multigpu" must not be skipped.
        if item.get_closest_marker("gpu") and n_gpus == 0:
            item.add_marker(no_gpu)
        elif item.get_closest_marker("multigpu") and n_gpus < 2:
            item.add_marker(one_gpu)
        elif item.get_closest_marker("nogpu") and gpu_here:
            item.add_marker(has_gpu)


def array_module(name: str) -> types.ModuleType:
    """The array module called *name*: ``numpy``, ``standin`` or ``cupy``."""
    if name == "numpy":
        return np
    if name == "standin":
        from demos import cupy_standin

        return cupy_standin.module
    import cupy

    return cupy


ON_THE_GPU = pytest.param("cupy", marks=pytest.mark.gpu, id="cupy")


@pytest.fixture(params=["numpy", "standin", ON_THE_GPU])
def xp(request: pytest.FixtureRequest) -> types.ModuleType:
    """An array module: the same check on NumPy, the CuPy stand-in and (on a GPU) CuPy."""
    return array_module(request.param)


@pytest.fixture(params=["standin", ON_THE_GPU])
def device_xp(request: pytest.FixtureRequest) -> types.ModuleType:
    """A module of GPU arrays: CuPy on a GPU, and its CPU stand-in everywhere."""
    return array_module(request.param)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed: failures reproduce exactly."""
    return np.random.default_rng(20261121)
