"""The splitting logic of chapter 6, with NumPy arrays standing in for devices."""

import numpy as np
import pytest

from demos.multigpu.reduce import auto_device_count
from demos.multigpu.splitting import device_count_for, matvec_split, split_ranges, sum_split


@pytest.mark.parametrize("n, parts", [(10, 3), (10_000, 4), (5, 5), (3, 4), (0, 2)])
def test_split_ranges_cover_everything_once_and_evenly(n, parts):
    slices = split_ranges(n, parts)
    assert len(slices) == parts
    covered = np.concatenate([np.arange(n)[s] for s in slices])
    np.testing.assert_array_equal(covered, np.arange(n))
    sizes = [s.stop - s.start for s in slices]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("n, parts", [(-1, 2), (10, 0), (10, 1.5)])
def test_split_ranges_rejects_bad_input(n, parts):
    with pytest.raises(ValueError):
        split_ranges(n, parts)


def test_device_count_grows_with_work_and_is_capped():
    assert device_count_for(30_000_000, 4, 100_000_000) == 1  # small sum: one GPU wins
    assert device_count_for(250_000_000, 4, 100_000_000) == 2
    assert device_count_for(750_000_000, 4, 100_000_000) == 4
    assert device_count_for(10**12, 4, 100_000_000) == 4
    assert auto_device_count(10_000_000, available=4) == 1  # one H200: 11 us, four: 17 us
    assert auto_device_count(30_000_000, available=4) == 4  # one H200: 34 us, four: 16 us
    assert auto_device_count(750_000_000, available=4) == 4
    with pytest.raises(ValueError):
        device_count_for(10, 0, 5)


@pytest.mark.parametrize("parts", [1, 2, 3, 4])
def test_matvec_split_equals_numpy(rng, parts):
    a = rng.random((101, 57), dtype=np.float32)
    x = rng.random(57, dtype=np.float32)
    np.testing.assert_allclose(matvec_split(a, x, parts), a @ x, rtol=1e-5)


def test_matvec_split_rejects_mismatched_shapes(rng):
    with pytest.raises(ValueError, match="mat-vec"):
        matvec_split(rng.random((4, 5)), rng.random(6), 2)


@pytest.mark.parametrize("parts", [1, 2, 4])
def test_sum_split_equals_numpy(rng, parts):
    v = rng.random(100_003, dtype=np.float32)
    assert sum_split(v, parts) == pytest.approx(v.sum(dtype=np.float64), rel=1e-12)


def test_reference_result_is_consistent_and_plots(tmp_path):
    """The committed H200 result: speedups follow from its times, errors are small, figures draw."""
    from demos.multigpu.plots import plot
    from demos.shipped_results import RESULTS_DIR, load

    if not (RESULTS_DIR / "multigpu_h200.json").exists():
        pytest.skip("no reference multigpu result committed")
    res = load("multigpu_h200", required=True)["results"]
    times = res["matvec"]["times_s"]
    for g, speedup in res["matvec"]["speedup"].items():
        assert speedup == pytest.approx(times["1"] / times[g])
    assert max(res["matvec"]["error"].values()) < 1e-5
    assert max(res["reduce"]["relative_error"].values()) < 1e-5
    assert max(res["lorenz"]["max_abs_error_vs_numpy"].values()) < 1e-3
    # the automatic device count never picks a count that was measured to be slower than one GPU
    for n, curve in res["reduce"]["times_s"].items():
        chosen = str(auto_device_count(int(n), available=4))
        if chosen in curve:
            assert curve[chosen] <= curve["1"] * 1.05
    assert len(plot(load("multigpu_h200", required=True), tmp_path)) == 2


def test_the_sums_grid_follows_the_limits_of_the_gpu_it_runs_on() -> None:
    """Why: 8 blocks of 256 per multiprocessor fill an H100 or H200 (2,048 threads each), but a
    GPU whose multiprocessors hold fewer threads would run the extra blocks as a second wave."""
    from demos.multigpu.reduce import blocks_per_multiprocessor

    hopper = {"MaxThreadsPerMultiProcessor": 2048, "MaxBlocksPerMultiprocessor": 32}
    ada = {"MaxThreadsPerMultiProcessor": 1536, "MaxBlocksPerMultiprocessor": 24}
    turing = {"MaxThreadsPerMultiProcessor": 1024, "MaxBlocksPerMultiprocessor": 16}
    assert blocks_per_multiprocessor(hopper) == 8
    assert blocks_per_multiprocessor(ada) == 6
    assert blocks_per_multiprocessor(turing) == 4
    assert blocks_per_multiprocessor(hopper, block=32) == 32  # the block limit binds
    assert blocks_per_multiprocessor({"MaxThreadsPerMultiProcessor": 2048}, block=32) == 64
    with pytest.raises(ValueError, match="holds no block"):
        blocks_per_multiprocessor(turing, block=2048)
