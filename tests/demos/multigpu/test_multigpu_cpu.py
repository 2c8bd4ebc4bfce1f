"""Chapter 6 examples on whatever this machine has (CPU workers, simulator, or GPUs)."""

import json

import numpy as np
import pytest

from demos.multigpu import device_threads, lorenz, pipeline, tiles
from demos.multigpu.workload import reference
from helpers import run_mpirun


def _workers_for_this_machine() -> int:
    """One worker per GPU (1 on a one-GPU machine), two CPU workers without GPUs."""
    from demos import hardware

    return hardware.gpu_count() or 2


def test_process_pool_one_device_per_worker():
    from demos.multigpu.process_pool import run_per_device

    n_workers = _workers_for_this_machine()
    total, reports = run_per_device(200_000, n_workers=n_workers)
    assert total == pytest.approx(reference(200_000), rel=1e-12)
    assert len({r["pid"] for r in reports}) == n_workers  # really one process per worker


def test_process_pool_refuses_more_workers_than_gpus():
    from demos.multigpu.process_pool import worker_devices

    with pytest.raises(ValueError, match="2 workers but only 1 GPU"):
        worker_devices(2, n_gpus=1, inherited="0")
    with pytest.raises(ValueError, match="at least 1"):
        worker_devices(0, n_gpus=0)
    assert worker_devices(2, n_gpus=0) == [None, None]  # no GPU: CPU workers, nothing pinned


@pytest.mark.parametrize(
    "inherited, expected",
    [
        (None, ["0", "1"]),  # no scheduler: all GPUs, by index
        ("2,3", ["2", "3"]),  # Slurm gave this job GPUs 2 and 3
        ("MIG-aaa, MIG-bbb", ["MIG-aaa", "MIG-bbb"]),  # MIG slices by UUID
    ],
)
def test_worker_i_gets_the_ith_inherited_device(monkeypatch, inherited, expected):
    from demos.multigpu.process_pool import worker_devices

    if inherited is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", inherited)
    assert worker_devices(2, n_gpus=2) == expected


def test_workers_are_pinned_to_the_schedulers_gpus(monkeypatch):
    """End to end: each spawned worker really runs with its own entry of the job's list."""
    from demos import hardware
    from demos.multigpu import process_pool

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7,GPU-5e1f")  # no such GPUs here: workers use NumPy
    monkeypatch.setattr(hardware, "gpu_count", lambda: 2)
    total, reports = process_pool.run_per_device(10_000)
    assert [r["visible"] for r in reports] == ["7", "GPU-5e1f"]
    assert total == pytest.approx(reference(10_000), rel=1e-12)


def test_dask_cluster_runs_the_same_function():
    pytest.importorskip("dask.distributed")
    from demos.multigpu.dask_workers import run_on_cluster

    n_workers = _workers_for_this_machine()
    total, reports, kind = run_on_cluster(100_000, n_workers=n_workers)
    assert total == pytest.approx(reference(100_000), rel=1e-12)
    assert len(reports) == n_workers and "Cluster" in kind


def test_dask_cluster_refuses_more_workers_than_gpus(monkeypatch):
    pytest.importorskip("dask.distributed")
    from demos import hardware
    from demos.multigpu.dask_workers import make_cluster

    monkeypatch.setattr(hardware, "gpu_count", lambda: 1)
    with pytest.raises(ValueError, match="one GPU per process"):
        make_cluster(2)


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        pytest.param(100_000, "rank 1/2 (node-local 1)", id="any-machine"),
        # on two GPUs each rank takes its own device and the sum is staged through the host
        pytest.param(1_000_000, "GPU 1", marks=pytest.mark.multigpu, id="two-gpus"),
    ],
)
def test_mpi_sum_with_two_ranks(n, expected):
    proc = run_mpirun("-m", "demos.multigpu.mpi_sum", "--n", str(n), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout and expected in proc.stdout


def test_threaded_add_matches_numpy(rng):
    a, b = rng.random(10_001), rng.random(10_001)
    np.testing.assert_array_equal(device_threads.threaded_add(a, b), a + b)


def test_tiles_with_halo_equal_the_unsplit_blur(rng):
    image = rng.random((37, 53)).astype(np.float32)
    whole = tiles.blur(image)
    for grid in [(1, 1), (2, 2), (3, 4)]:
        np.testing.assert_allclose(tiles.blur_tiled(image, grid), whole, rtol=1e-6)


def test_tiles_reject_non_images(rng):
    with pytest.raises(ValueError, match="2-D"):
        tiles.blur_tiled(rng.random(10))


def test_pipeline_equals_unsplit_model(rng):
    w1, w2 = pipeline.make_weights(20, 32, 5)
    x = rng.standard_normal((50, 20)).astype(np.float32)
    np.testing.assert_allclose(
        pipeline.forward_pipelined(x, w1, w2, micro_batches=4),
        pipeline.forward(x, w1, w2),
        rtol=1e-4,
        atol=1e-5,
    )
    with pytest.raises(ValueError):
        pipeline.forward_pipelined(x, w2, w1)


def test_lorenz_numba_cpu_matches_numpy_rk4():
    u0, p = lorenz.ensemble_problem(200, dtype=np.float64)
    ref = lorenz.lorenz_numpy(u0, p, 0.001, 300)
    np.testing.assert_allclose(lorenz.lorenz_cpu(u0, p, 0.001, 300), ref, rtol=1e-10, atol=1e-10)
    u32, p32 = lorenz.ensemble_problem(200)
    np.testing.assert_allclose(lorenz.lorenz_cpu(u32, p32, 0.001, 300), ref, atol=1e-3)


def test_lorenz_kernel_matches_numpy_rk4():
    """On CPU this runs in the CUDA simulator (tiny ensemble); on a GPU, for real."""
    u0, p = lorenz.ensemble_problem(32)
    ref = lorenz.lorenz_numpy(u0, p, 0.001, 50)
    np.testing.assert_allclose(lorenz.lorenz_gpu(u0, p, 0.001, 50), ref, atol=1e-4)


def test_lorenz_rejects_bad_input():
    u0, p = lorenz.ensemble_problem(4)
    with pytest.raises(ValueError):
        lorenz.lorenz_cpu(u0, p[:, :2], 0.01, 1)
    with pytest.raises(TypeError):
        lorenz.lorenz_cpu(u0, p.astype(np.float64), 0.01, 1)


def test_data_parallel_training_equals_single_device():
    pytest.importorskip("keras")
    from demos.multigpu import data_parallel

    x, y = data_parallel.toy_data(128)
    w_single, loss_single, _ = data_parallel.train(x, y, distributed=False)
    w_dist, loss_dist, description = data_parallel.train(x, y, distributed=True)
    assert loss_single[-1] < loss_single[0]  # it learns
    # the same mathematics; only the order of the gradient all-reduce differs between devices
    np.testing.assert_allclose(loss_dist, loss_single, rtol=1e-3)
    for a, b in zip(w_dist, w_single):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    assert "replica" in description or "DataParallel" in description


def test_bench_cli_writes_json_and_plots(tmp_path):
    from demos import hardware
    from demos.__main__ import main

    if hardware.has_gpu():
        pytest.skip(
            "the full GPU benchmark is run by tools/gpu-node/multigpu.sh, not by the test suite"
        )
    assert main(["bench", "multigpu", "--output", str(tmp_path), "--repeats", "1"]) == 0
    (path,) = tmp_path.glob("multigpu_*.json")
    data = json.loads(path.read_text())
    assert data["benchmark"] == "multigpu" and data["results"]["gpu_count"] == 0
    assert data["results"]["cpu"]["sum_10M_numpy"]["median_s"] > 0


def test_plot_of_a_gpu_result(tmp_path):
    from demos.multigpu.plots import plot

    fake = {
        "benchmark": "multigpu",
        "results": {
            "matvec": {"speedup": {"1": 1.0, "2": 1.9, "4": 3.5}},
            "reduce": {
                "times_s": {"1000": {"1": 1e-5, "2": 2e-5}, "1000000": {"1": 1e-3, "2": 6e-4}},
                "speedup": {"1000": {"1": 1.0, "2": 0.5}},
                "crossover_size": 1000000,
            },
        },
    }
    files = plot(fake, tmp_path)
    assert [f.name for f in files] == ["multigpu_speedup.png", "multigpu_reduce_crossover.png"]
    assert all(f.stat().st_size > 1000 for f in files)
    with pytest.raises(ValueError):
        plot({"benchmark": "distance"}, tmp_path)
