"""The shared input checks turn bad input into one clear sentence."""

import numpy as np
import pytest

from demos.validation import check_output, check_points


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_accepts_float_arrays(dtype, rng):
    points = rng.random((5, 3)).astype(dtype)
    assert check_points(points) is points


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (np.zeros(5), ValueError, r"2-D array of shape \(n, d\); got shape \(5,\)"),
        (np.zeros((0, 3)), ValueError, "at least one point"),
        (np.zeros((4, 0)), ValueError, "at least one coordinate"),
        (np.zeros((4, 3), dtype=np.int64), TypeError, "float32 or float64, got int64"),
        (np.zeros((4, 3), dtype=np.complex128), TypeError, "got complex128"),
        ([[0.0, 1.0, 2.0]], TypeError, "not a list"),
        ("points", TypeError, "NumPy or CuPy array"),
    ],
)
def test_rejects_bad_input(bad, error, message):
    with pytest.raises(error, match=message):
        check_points(bad)


def test_nan_policy(rng):
    points = rng.random((6, 3))
    points[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity.*row 4"):
        check_points(points)
    assert check_points(points, allow_nonfinite=True) is points


def test_output_check():
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        check_output(np.zeros((3, 2)), 3, 3, np.float64)
    with pytest.raises(TypeError, match="float32"):
        check_output(np.zeros((3, 3)), 3, 3, np.float32)


def test_pair_check_returns_the_same_array_for_one_point_set(rng):
    from demos.validation import check_pair

    points = rng.random((4, 3))
    x, y = check_pair(points)
    assert x is points and y is points


@pytest.mark.parametrize(
    "other, error, message",
    [
        (np.zeros((4, 2)), ValueError, "same number of coordinates, got 3 and 2"),
        (np.zeros((4, 3), np.float32), TypeError, "same dtype, got float64 and float32"),
    ],
)
def test_pair_check_names_the_mismatch(other, error, message):
    from demos.validation import check_pair

    with pytest.raises(error, match=message):
        check_pair(np.zeros((4, 3)), other)


def test_library_of_arrays_is_told_from_the_type():
    from numba import cuda

    from demos.validation import array_library, is_device_array, require_device, require_host

    host = np.zeros((2, 3))
    device = cuda.to_device(host)  # a simulated device array without a GPU
    assert array_library(host) == "numpy" and not is_device_array(host)
    assert is_device_array(device)
    with pytest.raises(TypeError, match="takes NumPy arrays"):
        require_host(host, device, backend="X")
    with pytest.raises(TypeError, match="takes GPU arrays"):
        require_device(device, host, backend="X")
    require_host(host, None, backend="X")  # None (no other point set) is fine
