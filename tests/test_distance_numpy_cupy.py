"""NumPy, CuPy and chunked distance matrices against a float64 broadcasting reference."""

from __future__ import annotations

import numpy as np
import pytest

from demos import hardware
from demos.distance import chunked, generic, numpy_backend

SIZES = (1, 2, 17, 257)
DTYPES = (np.float32, np.float64)


def reference(x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    y = x if y is None else y
    x, y = x.astype(np.float64), y.astype(np.float64)
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def assert_matches(result, x, y=None) -> None:
    expected = reference(x, y)
    assert result.shape == expected.shape
    assert result.dtype == x.dtype
    # the expanded formula cancels |x|^2 + |y|^2 - 2xy: error scales with the norms
    atol = 1e-4 if x.dtype == np.float32 else 1e-11
    np.testing.assert_allclose(
        np.asarray(result, dtype=np.float64),
        expected,
        rtol=1e-4 if x.dtype == np.float32 else 1e-9,
        atol=atol,
    )


def points(rng, n, dtype, d=3):
    return rng.random((n, d)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_numpy_backend(rng, n, dtype):
    x = points(rng, n, dtype)
    assert_matches(numpy_backend.distance_matrix(x), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rectangular_and_higher_dimension(rng, dtype):
    x, y = points(rng, 17, dtype, d=5), points(rng, 9, dtype, d=5)
    assert_matches(numpy_backend.distance_matrix(x, y), x, y)
    assert_matches(chunked.distance_matrix_chunked(x, y, block_rows=4), x, y)


def test_generic_steps_compose(rng):
    x = points(rng, 17, np.float64)
    x2 = generic.row_norms(x)
    np.testing.assert_allclose(x2, (x * x).sum(1))
    np.testing.assert_allclose(generic.inner_products(x, x), x @ x.T)
    assert_matches(generic.combine(x2, generic.inner_products(x, x), x2), x)
    assert generic.get_array_module(x) is np


def test_course_compat_numpy(rng):
    from demos.demo_numpy import distance_matrix

    x = points(rng, 17, np.float64)
    assert_matches(distance_matrix(x), x)


@pytest.mark.parametrize(
    "bad, error",
    [([[0.0, 1.0]], TypeError), (np.zeros(3), ValueError), (np.zeros((3, 2), int), TypeError)],
)
def test_bad_input_is_rejected(bad, error):
    with pytest.raises(error):
        numpy_backend.distance_matrix(bad)
    with pytest.raises(error):
        chunked.distance_matrix_chunked(bad)


def test_mismatched_coordinates(rng):
    with pytest.raises(ValueError, match="coordinates"):
        numpy_backend.distance_matrix(points(rng, 4, np.float64, 3), points(rng, 4, np.float64, 2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_chunked_tiny_blocks(rng, n, dtype):
    x = points(rng, n, dtype)
    assert_matches(chunked.distance_matrix_chunked(x, block_rows=5), x)


def test_chunked_into_memmap(rng, tmp_path):
    x = points(rng, 257, np.float64)
    out = np.memmap(tmp_path / "d.dat", dtype=np.float64, mode="w+", shape=(257, 257))
    result = chunked.distance_matrix_chunked(x, out=out, block_rows=5, progress=True)
    assert result is out
    out.flush()
    again = np.memmap(tmp_path / "d.dat", dtype=np.float64, mode="r", shape=(257, 257))
    assert_matches(np.asarray(again), x)


def test_chunked_checks_out_and_options(rng):
    x = points(rng, 8, np.float64)
    with pytest.raises(ValueError, match="shape"):
        chunked.distance_matrix_chunked(x, out=np.empty((8, 7)))
    with pytest.raises(ValueError, match="block_rows"):
        chunked.distance_matrix_chunked(x, block_rows=0)
    with pytest.raises(ValueError, match="device_memory_fraction"):
        chunked.distance_matrix_chunked(x, device_memory_fraction=0)


def test_choose_block_rows():
    assert (
        chunked.choose_block_rows(m=1000, itemsize=8, budget_bytes=2 * 8 * 1000 * 7, n_buffers=2)
        == 7
    )
    assert chunked.choose_block_rows(m=10**9, itemsize=8, budget_bytes=1, n_buffers=2) == 1


@pytest.mark.skipif(
    hardware.cupy_available(), reason="checks the error path of machines without a GPU"
)
def test_cupy_without_gpu_says_so(rng):
    from demos.demo_cupy import distance_matrix
    from demos.distance import cupy_backend

    x = points(rng, 4, np.float64)
    with pytest.raises(hardware.GPUUnavailableError, match="CuPy"):
        distance_matrix(x)
    with pytest.raises(hardware.GPUUnavailableError):
        cupy_backend.distance_matrix_lean(x)


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_cupy_versions(rng, n, dtype):
    import cupy as cp

    from demos.demo_cupy import distance_matrix
    from demos.distance import cupy_backend

    x = points(rng, n, dtype)
    assert_matches(distance_matrix(x), x)
    d_x = cp.asarray(x)
    assert_matches(cp.asnumpy(cupy_backend.distance_matrix_gpu(d_x)), x)
    assert_matches(cp.asnumpy(cupy_backend.distance_matrix_lean(d_x)), x)
    assert generic.get_array_module(d_x) is cp


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_rectangular_and_out(rng, dtype):
    import cupy as cp

    from demos.distance import cupy_backend

    x, y = points(rng, 17, dtype, 5), points(rng, 9, dtype, 5)
    d_x, d_y = cp.asarray(x), cp.asarray(y)
    assert_matches(cp.asnumpy(cupy_backend.distance_matrix_gpu(d_x, d_y)), x, y)
    out = cp.full((17, 9), cp.nan, dtype=dtype)
    assert cupy_backend.distance_matrix_lean(d_x, d_y, out=out) is out
    assert_matches(cp.asnumpy(out), x, y)
    with pytest.raises(TypeError):
        cupy_backend.distance_matrix_gpu(x)


@pytest.mark.gpu
def test_cupy_lean_peak_memory(rng):
    """The lean version's peak pool memory stays within 1.2x its output (the drop-in needs ~3x)."""
    import cupy as cp

    from demos.benchmarks.distance import run_memory

    result = run_memory(2000, np.float64, seed=0)
    assert result["cupy-lean"]["peak_over_output"] <= 1.2
    assert result["cupy"]["peak_over_output"] >= 2.0
    cp.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_on_gpu_streams(rng, dtype):
    x = points(rng, 257, dtype)
    assert_matches(chunked.distance_matrix_chunked(x, block_rows=5), x)
    assert_matches(chunked.distance_matrix_chunked(x, device_memory_fraction=0.5), x)
