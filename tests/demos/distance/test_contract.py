"""Every distance backend against the float64 reference, under one contract.

The backends are looked up by their benchmark names (``demos.distance.backend``),
so a new backend is tested by adding it to the table. Backends this machine
cannot run are skipped with the reason; the Numba CUDA ones run in the
simulator at small sizes, and at sizes that cross tiles and blocks on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from demos import hardware
from demos.distance import BACKENDS, backend
from helpers import assert_distances, random_points

DTYPES = [np.float32, np.float64]
SIMULATED = hardware.simulator_enabled()


def usable(name: str):
    """The backend, or a skip with the reason it cannot run here."""
    found = backend(name)
    reason = found.unavailable()
    if reason:
        pytest.skip(reason)
    return found


def sizes() -> list:
    """Small sizes everywhere; sizes crossing 16/32/128-wide tiles and blocks on a GPU only."""
    return [1, 2, 17] + [pytest.param(n, marks=pytest.mark.gpu) for n in (257, 1000, 4099)]


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", sizes())
def test_backend_matches_reference(name, dtype, n, rng):
    x = random_points(rng, n, dtype)
    result = usable(name).host(x)
    assert isinstance(result, np.ndarray)
    assert_distances(result, x)


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_rectangular_with_more_coordinates(name, rng):
    x, y = random_points(rng, 13, np.float32, d=5), random_points(rng, 8, np.float32, d=5)
    assert_distances(usable(name).host(x, y), x, y)


BAD = [
    ([[0.0, 1.0, 2.0]], TypeError),  # a list
    (np.zeros((4, 3), dtype=np.int64), TypeError),
    (np.zeros(5), ValueError),  # 1-D
    (np.zeros((0, 3)), ValueError),
    (np.array([[0.0, np.nan, 1.0]]), ValueError),
]


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize(("bad", "error"), BAD)
def test_backend_rejects_bad_points_alike(name, bad, error):
    function = usable(name).host
    with pytest.raises(error):
        function(bad)


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_rejects_mismatched_pairs_alike(name):
    function = usable(name).host
    with pytest.raises(ValueError, match="same number of coordinates"):
        function(np.zeros((3, 3)), np.zeros((3, 2)))
    with pytest.raises(TypeError, match="same dtype"):
        function(np.zeros((3, 3)), np.zeros((3, 3), dtype=np.float32))


def test_table_names_match_the_benchmark_and_gpu_backends_have_a_device_api():
    assert {"numpy", "cupy", "cupy-lean", "numba-cpu", "numba-cpu-parallel"} <= set(BACKENDS)
    assert "numba-cuda-best" in BACKENDS
    for name in BACKENDS:
        entry = backend(name)
        assert (entry.device is not None) == (entry.needs is not None), name
    with pytest.raises(ValueError, match="unknown backend"):
        backend("numpy-turbo")


@pytest.mark.gpu
@pytest.mark.parametrize("name", [b for b in BACKENDS if backend(b).device is not None])
@pytest.mark.parametrize("dtype", DTYPES)
def test_device_api_fills_out_from_cupy_inputs(name, dtype, rng):
    cp = pytest.importorskip("cupy")
    device = usable(name).device
    x, y = random_points(rng, 300, dtype), random_points(rng, 200, dtype)
    out = cp.full((300, 200), cp.nan, dtype=dtype)
    assert device(cp.asarray(x), cp.asarray(y), out) is out
    assert_distances(out, x, y)
    assert_distances(device(cp.asarray(x)), x)
    with pytest.raises(TypeError, match="GPU arrays"):
        device(x)
