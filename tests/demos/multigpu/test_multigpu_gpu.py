"""Chapter 6 on real GPUs: every result against a NumPy or single-device reference."""

import numpy as np
import pytest

from demos import hardware
from demos.multigpu import device_threads, lorenz, pipeline, tiles
from demos.multigpu.matvec import SplitMatVec, matvec
from demos.multigpu.reduce import SplitSum, split_sum
from demos.multigpu.workload import reference

N_GPUS = hardware.gpu_count()


@pytest.mark.gpu
def test_matvec_one_gpu_matches_numpy(rng):
    a, x = rng.random((1000, 3000), dtype=np.float32), rng.random(3000, dtype=np.float32)
    np.testing.assert_allclose(matvec(a, x, 1), a.astype(np.float64) @ x, rtol=1e-4)


@pytest.mark.multigpu
def test_matvec_split_over_all_gpus_matches_numpy(rng):
    a, x = rng.random((1001, 3000), dtype=np.float32), rng.random(3000, dtype=np.float32)
    mv = SplitMatVec(a, x, N_GPUS)
    np.testing.assert_allclose(mv.run().get(), a.astype(np.float64) @ x, rtol=1e-4)
    assert mv.time_per_call(repeats=3) > 0
    np.testing.assert_allclose(
        mv.result.get(), a.astype(np.float64) @ x, rtol=1e-4
    )  # still right after timing
    assert SplitMatVec.random(64, 5000, N_GPUS).max_relative_error() < 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("n_devices", [1, None])
def test_sum_matches_numpy(rng, n_devices):
    v = rng.random(1_000_003, dtype=np.float32)
    assert split_sum(v, n_devices) == pytest.approx(v.sum(dtype=np.float64), rel=1e-5)


@pytest.mark.multigpu
def test_sum_on_all_gpus_matches_exact():
    s = SplitSum.filled(10_000_000, N_GPUS)
    assert s.run() == pytest.approx(s.exact(), rel=1e-5)
    s.time_per_call(repeats=3)
    assert s.run() == pytest.approx(s.exact(), rel=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, rel", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_sum_graph_and_eager_launches_match_numpy(rng, dtype, rel):
    v = rng.random(2_000_003).astype(dtype)  # odd size: the scalar tail after the vector loads
    s = SplitSum(v, N_GPUS)
    assert s.graph_error is None, s.graph_error  # the one-launch CUDA graph was captured
    expected = v.sum(dtype=np.float64)
    for use_graph in (True, False):
        assert s.run(use_graph) == pytest.approx(expected, rel=rel)
    s.time_per_call(repeats=5)  # back-to-back launches reuse every buffer: still right after
    assert s.run() == pytest.approx(expected, rel=rel)


@pytest.mark.multigpu
def test_dask_cuda_cluster_runs_one_worker_per_gpu():
    pytest.importorskip("dask_cuda", reason="dask-cuda comes with the 'cuda' extra")
    from demos.multigpu.dask_workers import run_on_cluster

    total, reports, kind = run_on_cluster(1_000_000)
    assert "LocalCUDACluster" in kind
    assert len(reports) == N_GPUS
    assert all(r["where"].startswith("GPU") for r in reports)
    assert len({r["visible"] for r in reports}) == N_GPUS  # each worker pinned to its own GPU
    assert total == pytest.approx(reference(1_000_000), rel=1e-6)


@pytest.mark.multigpu
def test_lorenz_on_all_gpus_matches_numpy():
    u0, p = lorenz.ensemble_problem(10_000)
    ref = lorenz.lorenz_numpy(u0, p, 0.001, 1000)
    np.testing.assert_allclose(lorenz.lorenz_gpu(u0, p, 0.001, 1000, n_gpus=N_GPUS), ref, atol=2e-3)
    ens = lorenz.ResidentEnsemble(u0, p, N_GPUS)
    assert ens.run(0.001, 1000) > 0
    np.testing.assert_allclose(ens.result(), ref, atol=2e-3)


@pytest.mark.gpu
def test_managed_memory_add_matches_numpy():
    result, expected = device_threads.managed_add(1_000_000)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.multigpu
def test_threads_tiles_pipeline_on_gpus(rng):
    a, b = rng.random(100_001), rng.random(100_001)
    np.testing.assert_array_equal(device_threads.threaded_add(a, b), a + b)
    image = rng.random((300, 401)).astype(np.float32)
    np.testing.assert_allclose(tiles.blur_tiled(image, (2, 2)), tiles.blur(image), rtol=1e-5)
    w1, w2 = pipeline.make_weights(64, 128, 10)
    x = rng.standard_normal((512, 64)).astype(np.float32)
    np.testing.assert_allclose(
        pipeline.forward_pipelined(x, w1, w2, 8), pipeline.forward(x, w1, w2), rtol=1e-3, atol=1e-3
    )


@pytest.mark.multigpu
def test_process_pool_pins_one_gpu_per_worker():
    from demos.multigpu.process_pool import run_per_device, visible_devices

    total, reports = run_per_device(1_000_000)
    assert total == pytest.approx(reference(1_000_000), rel=1e-9)
    assert [r["visible"] for r in reports] == visible_devices(N_GPUS)  # the job's own GPUs
    assert all(r["where"].startswith("GPU") for r in reports)
