"""What is particular to the NumPy, CuPy and chunked backends.

The contract all backends share is tested in test_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from demos.distance import chunked, generic, numpy_backend
from helpers import assert_distances, random_points, to_host

SIZES = (1, 2, 17, 257)
DTYPES = (np.float32, np.float64)
assert_matches = assert_distances
points = random_points


@pytest.mark.parametrize("dtype", DTYPES)
def test_rectangular_and_higher_dimension(rng, dtype):
    x, y = points(rng, 17, dtype, d=5), points(rng, 9, dtype, d=5)
    assert_matches(numpy_backend.distance_matrix(x, y), x, y)
    assert_matches(chunked.distance_matrix(x, y, block_rows=4), x, y)


def test_generic_steps_compose(rng, xp):
    """Chapter 3's one code for every array module: the same results, in the input's module."""
    x = points(rng, 17, np.float64)
    d_x = xp.asarray(x)
    x2 = generic.row_norms(d_x)
    np.testing.assert_allclose(to_host(x2), (x * x).sum(1))
    np.testing.assert_allclose(to_host(generic.inner_products(d_x, d_x)), x @ x.T)
    assert_matches(generic.combine(x2, generic.inner_products(d_x, d_x), x2), x)
    assert_matches(generic.distance_matrix(d_x), x)
    assert generic.get_array_module(d_x) is xp


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_chunked_tiny_blocks(rng, n, dtype):
    x = points(rng, n, dtype)
    assert_matches(chunked.distance_matrix(x, block_rows=5), x)


def test_chunked_into_memmap(rng, tmp_path):
    x = points(rng, 257, np.float64)
    out = np.memmap(tmp_path / "d.dat", dtype=np.float64, mode="w+", shape=(257, 257))
    result = chunked.distance_matrix(x, out=out, block_rows=5, progress=True)
    assert result is out
    out.flush()
    again = np.memmap(tmp_path / "d.dat", dtype=np.float64, mode="r", shape=(257, 257))
    assert_matches(np.asarray(again), x)


def test_chunked_checks_out_and_options(rng):
    x = points(rng, 8, np.float64)
    with pytest.raises(ValueError, match="shape"):
        chunked.distance_matrix(x, out=np.empty((8, 7)))
    with pytest.raises(ValueError, match="block_rows"):
        chunked.distance_matrix(x, block_rows=0)
    with pytest.raises(ValueError, match="device_memory_fraction"):
        chunked.distance_matrix(x, device_memory_fraction=0)


def test_choose_block_rows():
    assert (
        chunked.choose_block_rows(m=1000, itemsize=8, budget_bytes=2 * 8 * 1000 * 7, n_buffers=2)
        == 7
    )
    assert chunked.choose_block_rows(m=10**9, itemsize=8, budget_bytes=1, n_buffers=2) == 1


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_cupy_versions(rng, n, dtype):
    import cupy as cp

    from demos.distance import cupy_backend, cupy_lean

    x = points(rng, n, dtype)
    d_x = cp.asarray(x)
    assert_matches(cp.asnumpy(cupy_backend.distance_matrix_device(d_x)), x)
    assert_matches(cp.asnumpy(cupy_lean.distance_matrix_device(d_x)), x)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_rectangular_and_out(rng, dtype):
    import cupy as cp

    from demos.distance import cupy_backend, cupy_lean

    x, y = points(rng, 17, dtype, 5), points(rng, 9, dtype, 5)
    d_x, d_y = cp.asarray(x), cp.asarray(y)
    assert_matches(cp.asnumpy(cupy_backend.distance_matrix_device(d_x, d_y)), x, y)
    out = cp.full((17, 9), cp.nan, dtype=dtype)
    assert cupy_lean.distance_matrix_device(d_x, d_y, out=out) is out
    assert_matches(cp.asnumpy(out), x, y)
    with pytest.raises(TypeError):
        cupy_backend.distance_matrix_device(x)


@pytest.mark.gpu
def test_cupy_lean_peak_memory(rng):
    """The lean version's peak pool memory stays within 1.2x its output (the drop-in needs ~3x)."""
    import cupy as cp

    from demos.benchmarks.distance_memory import run_memory

    result = run_memory(2000, np.float64, seed=0)
    assert result["cupy-lean"]["peak_over_output"] <= 1.2
    assert result["cupy"]["peak_over_output"] >= 2.0
    cp.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_chunked_on_gpu_streams(rng, dtype):
    x = points(rng, 257, dtype)
    assert_matches(chunked.distance_matrix(x, block_rows=5), x)
    assert_matches(chunked.distance_matrix(x, device_memory_fraction=0.5), x)
