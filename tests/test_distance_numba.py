"""The Numba distance-matrix backends against a float64 NumPy reference.

CPU versions run everywhere; CUDA kernels run in the simulator here (tiny
sizes: every CUDA thread is a Python thread) and, marked ``gpu``, on a real
device at sizes that cross block and tile boundaries (257, 1000, 4099).
"""

from __future__ import annotations

import numpy as np
import pytest

from demos import hardware
from demos.distance import numba_cpu, numba_cuda

DTYPES = [np.float32, np.float64]


def reference(x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    y = x if y is None else y
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    return ((x64[:, None, :] - y64[None, :, :]) ** 2).sum(-1)


def assert_matches(result: np.ndarray, x: np.ndarray, y: np.ndarray | None = None) -> None:
    expected = reference(x, y)
    assert result.shape == expected.shape
    assert result.dtype == x.dtype
    rtol, atol = (1e-5, 1e-5) if x.dtype == np.float32 else (1e-12, 1e-12)
    np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol)


def points(rng: np.random.Generator, n: int, dtype, d: int = 3) -> np.ndarray:
    return rng.standard_normal((n, d)).astype(dtype)


# ------------------------------------------------------------------ CPU
CPU_FUNCTIONS = [numba_cpu.distance_matrix_serial, numba_cpu.distance_matrix_parallel]


@pytest.mark.parametrize("function", CPU_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 17, 257])
def test_cpu_matches_reference(function, dtype, n, rng):
    x = points(rng, n, dtype)
    result = function(x)
    assert_matches(result, x)
    np.testing.assert_array_equal(np.diag(result), 0)


@pytest.mark.parametrize("function", CPU_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_rectangular_and_other_dims(function, dtype, rng):
    x, y = points(rng, 31, dtype, d=5), points(rng, 12, dtype, d=5)
    assert_matches(function(x, y), x, y)
    x1 = points(rng, 9, dtype, d=1)
    assert_matches(function(x1), x1)


def test_cpu_accepts_non_contiguous_views(rng):
    x = points(rng, 40, np.float64, d=6)[::2, ::2]
    assert_matches(numba_cpu.distance_matrix_parallel(x), x)


def test_demo_numba_cpu_compat(rng):
    from demos.demo_numba_cpu import distance_matrix

    x = points(rng, 50, np.float64)
    assert_matches(distance_matrix(x), x)


BAD_INPUTS = [
    ([[0.0, 1.0, 2.0]], TypeError),  # a list
    (np.zeros((4, 3), dtype=np.int64), TypeError),
    (np.zeros(5), ValueError),  # 1-D
    (np.zeros((0, 3)), ValueError),
    (np.array([[0.0, np.nan, 1.0]]), ValueError),
]


@pytest.mark.parametrize("function", CPU_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("bad", "error"), BAD_INPUTS)
def test_cpu_rejects_bad_input(function, bad, error):
    with pytest.raises(error):
        function(bad)


@pytest.mark.parametrize("function", CPU_FUNCTIONS, ids=lambda f: f.__name__)
def test_cpu_rejects_mismatched_other(function):
    with pytest.raises(ValueError, match="same number of coordinates"):
        function(np.zeros((3, 3)), np.zeros((3, 2)))
    with pytest.raises(TypeError, match="same dtype"):
        function(np.zeros((3, 3)), np.zeros((3, 3), dtype=np.float32))


# ----------------------------------------------------------------- CUDA
def cuda_usable() -> bool:
    return hardware.simulator_enabled() or hardware.has_gpu()


needs_cuda = pytest.mark.skipif(not cuda_usable(), reason="no GPU and the CUDA simulator is off")
KERNEL_NAMES = list(numba_cuda.KERNELS) + ["best"]


@pytest.mark.simulator
@needs_cuda
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 17])
def test_cuda_kernel_matches_reference(kernel, dtype, n, rng):
    x = points(rng, n, dtype)
    assert_matches(numba_cuda.distance_matrix(x, kernel=kernel), x)


@pytest.mark.simulator
@needs_cuda
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_cuda_kernel_rectangular(kernel, rng):
    x, y = points(rng, 13, np.float32, d=4), points(rng, 6, np.float32, d=4)
    assert_matches(numba_cuda.distance_matrix(x, y, kernel=kernel), x, y)


@pytest.mark.simulator
@needs_cuda
def test_cuda_tiled_covers_more_coordinates_than_a_tile(rng):
    x = points(rng, 5, np.float64, d=numba_cuda.TILE + 3)  # two coordinate tiles
    assert_matches(numba_cuda.distance_matrix(x, kernel="tiled"), x)
    assert_matches(numba_cuda.distance_matrix(x, kernel="best"), x)  # falls back past ROWS_MAX_D


@pytest.mark.simulator
@needs_cuda
def test_cuda_device_api_reuses_out(rng):
    from numba import cuda

    x = points(rng, 9, np.float32)
    d_out = cuda.device_array((9, 9), dtype=np.float32)
    returned = numba_cuda.distance_matrix_device(cuda.to_device(x), out=d_out, kernel="coalesced")
    assert returned is d_out
    assert_matches(d_out.copy_to_host(), x)


@pytest.mark.simulator
@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_demo_numba_gpu_compat_launch(dtype, rng):
    from demos.demo_numba_gpu import distance_matrix

    n = 9
    x = points(rng, n, dtype)
    result = np.zeros((n, n), dtype=dtype)
    distance_matrix[(n, n), (1, 1)](x, result)
    assert_matches(result, x)


def test_launch_config_shapes():
    assert numba_cuda.launch_config("naive", 5, 7) == ((5, 7), (1, 1))
    grid, block = numba_cuda.launch_config("coalesced", 100, 70)
    assert block == (32, 8) and grid == (3, 13)  # x covers the columns
    grid, block = numba_cuda.launch_config("coalesced", 100, 70, block=(16, 16))
    assert grid == (5, 7)
    assert numba_cuda.launch_config("tiled", 33, 16) == ((1, 3), (16, 16))
    grid, _ = numba_cuda.launch_config("best", 10**7, 3)
    assert grid[1] <= numba_cuda.MAX_GRID_Y
    with pytest.raises(ValueError):
        numba_cuda.launch_config("naive", 4, 4, block=(16, 16))
    with pytest.raises(ValueError):
        numba_cuda.launch_config("warp-speed", 4, 4)


@needs_cuda
@pytest.mark.parametrize(("bad", "error"), BAD_INPUTS)
def test_cuda_rejects_bad_input(bad, error):
    with pytest.raises(error):
        numba_cuda.distance_matrix(bad)


@needs_cuda
def test_cuda_rejects_unknown_kernel_and_mismatch():
    with pytest.raises(ValueError, match="unknown kernel"):
        numba_cuda.distance_matrix(np.zeros((2, 3)), kernel="fastest")
    with pytest.raises(TypeError, match="same dtype"):
        numba_cuda.distance_matrix(np.zeros((2, 3)), np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="GPU array"):
        numba_cuda.distance_matrix_device(np.zeros((2, 3)))


def test_no_gpu_no_simulator_raises_clearly(monkeypatch):
    monkeypatch.setattr(hardware, "simulator_enabled", lambda: False)
    monkeypatch.setattr(hardware, "has_gpu", lambda: False)
    with pytest.raises(hardware.GPUUnavailableError, match="needs an NVIDIA CUDA GPU"):
        numba_cuda.distance_matrix(np.zeros((2, 3)))


# --------------------------------------------------------- real GPU only
@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [257, 1000, 4099])
def test_gpu_kernel_matches_reference(kernel, dtype, n, rng):
    x = points(rng, n, dtype)
    assert_matches(numba_cuda.distance_matrix(x, kernel=kernel), x)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_gpu_rectangular_and_cupy_inputs(kernel, rng):
    x, y = points(rng, 1000, np.float32), points(rng, 333, np.float32)
    assert_matches(numba_cuda.distance_matrix(x, y, kernel=kernel), x, y)
    if hardware.cupy_available():
        import cupy

        d_out = numba_cuda.distance_matrix_device(cupy.asarray(x), cupy.asarray(y), kernel=kernel)
        assert_matches(np.asarray(d_out.copy_to_host()), x, y)


@pytest.mark.simulator
@needs_cuda
@pytest.mark.parametrize("kernel", ["rows", "pairs"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_row_chunks_full_and_partial(kernel, dtype, rng):
    """18 rows in chunks of 4: four full (unrolled) chunks and a 2-row tail; 9 column pairs."""
    from numba import cuda

    x = points(rng, 18, dtype)
    d_out = numba_cuda.distance_matrix_device(
        cuda.to_device(x), kernel=kernel, block=4, rows_per_thread=4
    )
    assert_matches(d_out.copy_to_host(), x)
