"""What is particular to the Numba backends: the CPU loops, and the CUDA kernel dispatcher.

Correctness of every backend on the same inputs is in test_contract.py.
Here: which CUDA kernel actually runs (the dispatcher reports it, and never
substitutes silently), the launch configurations, the quads kernel compiled in
the simulator, and the original course's kernel launch.
"""

from __future__ import annotations

import numpy as np
import pytest

from demos import hardware
from demos.distance import cuda_launch, numba_cpu, numba_cuda
from helpers import assert_distances, on_cuda, random_points

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("parallel", [False, True])
def test_cpu_accepts_non_contiguous_views(parallel, rng):
    x = random_points(rng, 40, np.float64, d=6)[::2, ::2]
    assert_distances(numba_cpu.distance_matrix(x, parallel=parallel), x)
    assert np.all(np.diag(numba_cpu.distance_matrix(x, parallel=parallel)) == 0)


def test_best_is_per_dtype():
    assert numba_cuda.best_kernel(np.float32) == "quads"
    assert numba_cuda.best_kernel(np.float64) == "rows"  # 16-byte float64 pairs are slower
    assert set(numba_cuda.BEST.values()) <= set(numba_cuda.KERNELS)


def test_launch_config_shapes():
    assert numba_cuda.launch_config("naive", 5, 7) == ((5, 7), (1, 1))
    grid, block = numba_cuda.launch_config("coalesced", 100, 70)
    assert block == (32, 8) and grid == (3, 13)  # x covers the columns
    assert numba_cuda.launch_config("coalesced", 100, 70, block=(16, 16))[0] == (5, 7)
    assert numba_cuda.launch_config("tiled", 33, 16) == ((1, 3), (16, 16))
    assert numba_cuda.launch_config("quads", 64, 1024) == ((2, 2), (128,))  # 256 quads, 32 rows
    grid, _ = numba_cuda.launch_config("best", 10**7, 4)
    assert grid[1] <= numba_cuda.MAX_GRID_Y
    with pytest.raises(ValueError, match="one thread"):
        numba_cuda.launch_config("naive", 4, 4, block=(16, 16))
    with pytest.raises(ValueError, match="compiled in"):
        numba_cuda.launch_config("tiled", 4, 4, block=(8, 8))
    with pytest.raises(ValueError, match="unknown kernel"):
        numba_cuda.launch_config("warp-speed", 4, 4)


@pytest.mark.parametrize(
    ("kernel", "dtype", "m", "d", "other", "runs"),
    [
        ("quads", np.float32, 8, 3, False, "quads"),
        ("quads", np.float64, 8, 3, False, "pairs"),  # four float64 do not fit one store
        ("quads", np.float32, 6, 3, False, "pairs"),  # 6 columns: pairs, not quads
        ("pairs", np.float32, 5, 3, False, "rows"),  # odd number of columns
        ("best", np.float32, 8, 3, False, "quads"),
        ("best", np.float64, 8, 3, False, "rows"),
        ("best", np.float32, 8, 20, False, "tiled"),  # y[j] would spill out of registers
        ("symmetric", np.float32, 8, 3, True, "tiled"),  # two point sets: no symmetry
    ],
)
def test_plan_reports_the_kernel_that_runs_and_why(kernel, dtype, m, d, other, runs):
    x = np.zeros((6, d), dtype)
    y = np.zeros((m, d), dtype) if other or m != 6 else None
    plan = numba_cuda.plan_launch(x, y, kernel=kernel)
    assert plan.kernel == runs
    asked = numba_cuda.best_kernel(dtype) if kernel == "best" else kernel
    assert plan.substituted == (runs != asked)
    assert all(f"{runs} runs instead" in r or "runs instead" in r for r in plan.reasons)
    if plan.substituted:
        assert plan.reasons[-1].endswith(f"{runs} runs instead")


@on_cuda
def test_strict_turns_a_substitution_into_an_error(rng):
    from numba import cuda

    x = cuda.to_device(random_points(rng, 6, np.float64))
    with pytest.raises(ValueError, match="quads cannot run"):
        numba_cuda.distance_matrix_device(x, kernel="quads", strict=True)


@on_cuda
@pytest.mark.parametrize("kernel", ["quads", "pairs", "rows"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tuned_kernels_compile_and_run_as_planned(kernel, dtype, rng):
    """18 rows in chunks of 4 (four full chunks, a 2-row tail), 8 columns; quads included."""
    from numba import cuda

    x = random_points(rng, 18, dtype)
    y = random_points(rng, 8, dtype)
    d_x, d_y = cuda.to_device(x), cuda.to_device(y)
    plan = numba_cuda.plan_launch(d_x, d_y, kernel=kernel, block=4, rows_per_thread=4)
    expected = "pairs" if (kernel, dtype) == ("quads", np.float64) else kernel
    assert plan.kernel == expected
    out = numba_cuda.distance_matrix_device(d_x, d_y, kernel=kernel, block=4, rows_per_thread=4)
    assert_distances(out.copy_to_host(), x, y)


@on_cuda
def test_device_api_reuses_out_and_checks_it(rng):
    from numba import cuda

    x = random_points(rng, 9, np.float32)
    d_out = cuda.device_array((9, 9), dtype=np.float32)
    returned = numba_cuda.distance_matrix_device(cuda.to_device(x), out=d_out, kernel="coalesced")
    assert returned is d_out
    assert_distances(d_out.copy_to_host(), x)
    with pytest.raises(ValueError, match="shape"):
        numba_cuda.distance_matrix_device(cuda.to_device(x), out=cuda.device_array((9, 8)))
    with pytest.raises(TypeError, match="GPU arrays"):
        numba_cuda.distance_matrix_device(cuda.to_device(x), out=np.empty((9, 9), np.float32))


@on_cuda
def test_tiled_covers_more_coordinates_than_a_tile(rng):
    x = random_points(rng, 5, np.float64, d=numba_cuda.TILE + 3)  # two coordinate tiles
    assert_distances(numba_cuda.distance_matrix(x, kernel="tiled"), x)


@on_cuda
def test_unknown_kernel_and_host_arrays_are_refused():
    with pytest.raises(ValueError, match="unknown kernel"):
        numba_cuda.distance_matrix(np.zeros((2, 3)), kernel="fastest")
    with pytest.raises(TypeError, match="GPU arrays"):
        numba_cuda.distance_matrix_device(np.zeros((2, 3)))


def test_no_gpu_no_simulator_raises_clearly(monkeypatch):
    monkeypatch.setattr(hardware, "simulator_enabled", lambda: False)
    monkeypatch.setattr(hardware, "has_gpu", lambda: False)
    with pytest.raises(hardware.GPUUnavailableError, match="needs an NVIDIA CUDA GPU"):
        numba_cuda.distance_matrix(np.zeros((2, 3)))


def test_launch_path_is_reported():
    status = cuda_launch.status()
    if hardware.simulator_enabled():
        assert "simulator" in status
    else:
        assert status == "direct" or status.startswith("through Numba")


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(numba_cuda.KERNELS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_direct_launch_matches_reference_on_repeated_calls(kernel, dtype, rng):
    """The second call of a shape takes the direct launch; both calls must be right."""
    cp = pytest.importorskip("cupy")
    x, y = random_points(rng, 1000, dtype), random_points(rng, 332, dtype)
    d_x, d_y = cp.asarray(x), cp.asarray(y)
    for _ in range(2):
        out = cp.full((1000, 332), cp.nan, dtype=dtype)
        numba_cuda.distance_matrix_device(d_x, d_y, out, kernel=kernel)
        assert_distances(out, x, y)
    assert cuda_launch.status() == "direct"
    sliced = cp.full((1000, 336), cp.nan, dtype=dtype)[:, 1:333]  # misaligned, strided rows
    numba_cuda.distance_matrix_device(d_x, d_y, sliced, kernel=kernel)
    assert_distances(sliced, x, y)


def test_widened_views_need_divisible_columns_and_aligned_rows():
    from demos.distance.cuda_tuned import Layout, widened

    f32 = np.dtype(np.float32)
    out = Layout(4096, (6, 8), (32, 4), f32)
    assert widened(out, 4) == Layout(4096, (6, 2), (32, 16), np.dtype(np.complex128))
    assert widened(out, 2) == Layout(4096, (6, 4), (32, 8), np.dtype(np.complex64))
    assert widened(out._replace(pointer=4100), 4) is None  # not 16-byte aligned
    assert widened(Layout(0, (6, 6), (24, 4), f32), 4) is None  # 6 columns
    assert widened(Layout(0, (6, 8), (36, 4), f32), 2) is None  # rows 36 bytes apart
    assert widened(Layout(0, (6, 8), (64, 8), np.dtype(np.float64)), 4) is None  # no float64 quads


def test_direct_launch_parameters_are_numbas_array_arguments():
    """meminfo, parent, element count, item size, address, shape, strides (bytes)."""
    from demos.distance.cuda_launch import _kind, _parameters
    from demos.distance.cuda_tuned import Layout

    layout = Layout(1 << 20, (3, 5), (40, 8), np.dtype(np.float64))
    assert _parameters(layout) == [0, 0, 15, 8, 1 << 20, 3, 5, 40, 8]
    assert _kind(layout) == ("<f8", True, False)
    assert _kind(layout._replace(strides=(48, 8))) == ("<f8", False, False)  # a column slice


def test_rows_per_thread_follow_the_gpus_multiprocessors(monkeypatch) -> None:
    """Why: the table's rows per thread come from an H200 sweep of large matrices; a GPU with more
    multiprocessors, or a smaller matrix, must still get enough blocks to keep every one busy."""
    rpt = numba_cuda.rows_per_thread_for
    assert rpt("quads", 32_768, 64, 132) == 32  # large: the table's value
    assert rpt("quads", 32_768, 64, 0) == 32  # no GPU known: the table
    assert rpt("quads", 1024, 2, 132) == 3  # 2 column blocks: 264 row chunks wanted
    assert rpt("rows", 1024, 2, 16) == 16  # a small GPU fills with the table's value
    assert rpt("pairs", 10, 1, 132) == 1  # never fewer than one row
    for sms, want in ((132, 3), (16, 32)):  # the launch plan asks the GPU it runs on
        monkeypatch.setattr(numba_cuda.hardware, "multiprocessors", lambda index=0, s=sms: s)
        numba_cuda._plan.cache_clear()
        grid, block = numba_cuda.launch_config("quads", 1024, 1024, 128)
        assert block == (128,) and grid == (2, -(-1024 // want))
    numba_cuda._plan.cache_clear()
