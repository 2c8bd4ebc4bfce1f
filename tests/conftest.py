"""Shared test set-up: GPU markers that skip with a reason, and a seeded RNG.

Importing :mod:`demos` first switches Numba to the CUDA simulator on machines
without a GPU (unless NUMBA_ENABLE_CUDASIM is already set), so kernel tests run
everywhere; on a GPU machine the same tests run on the real device.
"""

from __future__ import annotations

import numpy as np
import pytest

from demos import hardware


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    n_gpus = hardware.gpu_count()
    no_gpu = pytest.mark.skip(reason=f"needs a CUDA GPU: {hardware.no_gpu_reason()}")
    one_gpu = pytest.mark.skip(reason=f"needs 2 or more CUDA GPUs, this machine has {n_gpus}")
    for item in items:
        # Look at real markers, not item.keywords: keywords also hold
        # parametrize ids, and a case named "multigpu" must not be skipped.
        if item.get_closest_marker("gpu") and n_gpus == 0:
            item.add_marker(no_gpu)
        elif item.get_closest_marker("multigpu") and n_gpus < 2:
            item.add_marker(one_gpu)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed: failures reproduce exactly."""
    return np.random.default_rng(20261121)
