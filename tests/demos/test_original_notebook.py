"""The original course notebook's own calls keep working (COURSE.md, "Compatibility").

Why: ``demos/demo_*.py`` and ``demos/measurements*.json`` look unused from inside
this repository (no chapter imports them), but the original course's notebook
does, exactly as written here: three ``distance_matrix`` imports, one launch of a
raw kernel on host arrays, and three JSON files read by size or label. These
tests make those calls the way that notebook makes them, in one place, so that
a reader who wonders why the modules exist finds the reason, and a change that
would break the notebook fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import demos
from demos import hardware
from demos.distance.reference import reference_distance

PACKAGE = Path(demos.__file__).parent


def _points(n: int = 11) -> np.ndarray:
    return np.random.default_rng(5).random((n, 3))


def test_numpy_and_numba_cpu_distance_matrix() -> None:
    from demos.demo_numba_cpu import distance_matrix as numba_cpu_distance
    from demos.demo_numpy import distance_matrix

    points = _points()
    for got in (distance_matrix(points), numba_cpu_distance(points)):
        assert isinstance(got, np.ndarray) and got.shape == (11, 11)
        np.testing.assert_allclose(got, reference_distance(points, points), atol=1e-12)


def test_cupy_distance_matrix_returns_numpy_or_says_why_not() -> None:
    from demos.demo_cupy import distance_matrix

    points = _points()
    if not hardware.cupy_available():
        with pytest.raises(hardware.GPUUnavailableError, match="CuPy"):
            distance_matrix(points)
        return
    got = distance_matrix(points)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, reference_distance(points, points), atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_gpu_kernel_launched_on_host_arrays(dtype) -> None:
    """The notebook's launch: one block of one thread per entry, host arrays in and out."""
    from demos.demo_numba_gpu import distance_matrix

    points = _points(9).astype(dtype)
    n = len(points)
    result = np.empty((n, n), dtype=points.dtype)
    distance_matrix[(n, n), (1, 1)](points, result)
    want = reference_distance(points.astype(np.float64), points.astype(np.float64))
    np.testing.assert_allclose(result, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def _read(name: str) -> dict:
    return json.loads((PACKAGE / name).read_text(encoding="utf-8"))


def test_measurements_files_have_the_layout_the_notebook_reads() -> None:
    runtimes = _read("measurements.json")  # {"<n>": {"numpy": s, "cupy": s, "cpu": s, "gpu": s}}
    sizes = sorted(int(n) for n in runtimes)
    assert sizes and all(n > 0 for n in sizes)
    for per_size in runtimes.values():
        assert set(per_size) <= {"numpy", "cupy", "cpu", "gpu"} and "numpy" in per_size
        assert all(isinstance(s, float) and 0 < s < 3600 for s in per_size.values())
    ops = _read("measurements_ops.json")  # microseconds per operation and module
    names = {f"{m}.{op}" for m in ("np", "cp") for op in ("einsum", "matmul", "ops")}
    for per_size in ops.values():
        assert set(per_size) <= names and all(us > 0 for us in per_size.values())
    assert {int(n) for n in ops} <= set(sizes)
    cnn = _read("measurements_tf_cnn_cifar10.json")  # {"<label>": {"<device>": images/s}}
    assert cnn and all(
        isinstance(ips, float) and ips > 0 for per in cnn.values() for ips in per.values()
    )
