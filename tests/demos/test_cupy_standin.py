"""demos.cupy_standin: the one CPU stand-in for CuPy, of the chapters' checks and the graders."""

from __future__ import annotations

import numpy as np
import pytest

from demos import cupy_standin, validation
from demos.distance import generic
from demos.kernel_testing import get_array_module

xp = cupy_standin.module


def test_every_array_module_lookup_and_detector_sees_a_gpu_array() -> None:
    a = xp.asarray(np.ones((2, 3)))
    assert get_array_module(a) is xp and generic.get_array_module(a) is xp
    assert validation.array_library(a) == "cupy" and validation.is_device_array(a)
    assert generic.get_array_module(np.ones(2)) is np


def test_strict_standing_in_refuses_numpy_functions_but_not_operators_with_scalars() -> None:
    a = xp.asarray(np.arange(6.0).reshape(3, 2))

    def student(x):
        return np.float64(2.0) * x

    with cupy_standin.standing_in(student, strict=True):
        assert isinstance(student(a), xp.ndarray)
        with pytest.raises(TypeError, match="Unsupported type"):
            np.einsum("ij,ij->i", a, a)
        with pytest.raises(TypeError, match="Unsupported type"):
            np.sqrt(a)
    assert isinstance(np.einsum("ij,ij->i", a, a), xp.ndarray)  # as CuPy, outside strict


def test_copies_to_the_host_are_recorded_inside_standing_in_only() -> None:
    a = xp.asarray(np.ones((4, 4)))

    def student(x):
        import cupy

        assert cupy is xp
        return float(x.sum()), x.get()

    with cupy_standin.standing_in(student):
        student(a)
    assert cupy_standin.transfers == [("float()", ()), (".get()", (4, 4))]
    a.get()
    assert len(cupy_standin.transfers) == 2
