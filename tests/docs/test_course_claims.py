"""The qualitative claims the chapters make from the data shipped in demos/results/, checked.

Who wins, what does not pay and why, as the prose says it: each test reads the
same JSON the chapter's figures come from (tests/docs/test_course_numbers.py
checks the figures themselves), so a re-run benchmark that changes the story fails here.
"""

from __future__ import annotations

import re
from typing import Any

import nbformat
import numpy as np
import pytest
from course_results import (
    chapter6_sum_tb_per_s,
    cnn,
    copy_tb_per_s,
    distance_run,
    ncu_row,
    overlap_per_block,
    profiling,
    result,
    spec,
    two_stream_model_ms,
)

from helpers import ROOT


def test_ch03_one_core_numba_keeps_up_with_cupy_host_to_host() -> None:
    for n in (1024, 4096, 16384):
        assert distance_run("numba-cpu", n, "host_to_host") < 1.2 * distance_run(
            "cupy", n, "host_to_host"
        )
    assert distance_run("cupy", 4096, "host_to_host") < distance_run("numpy", 4096, "host_to_host")


def test_ch03_computing_is_a_small_share_of_the_host_to_host_time() -> None:
    assert distance_run("cupy", 4096, "device") < 0.1 * distance_run("cupy", 4096, "host_to_host")


def test_ch04_tiling_does_not_pay_and_blocks_of_one_thread_are_far_slower() -> None:
    assert distance_run("numba-cuda-tiled", 4096, "device") > distance_run(
        "numba-cuda-coalesced", 4096, "device"
    )
    assert distance_run("numba-cuda-naive", 4096, "device") > 10 * distance_run(
        "numba-cuda-coalesced", 4096, "device"
    )


def test_ch04_one_cpu_core_is_about_as_fast_as_the_best_kernel_host_to_host() -> None:
    for n in (4096, 16384):
        ratio = distance_run("numba-cpu", n, "host_to_host") / distance_run(
            "numba-cuda-best", n, "host_to_host"
        )
        assert 0.5 < ratio < 2.0, f"n={n}: one core / best GPU kernel host to host = {ratio:.2f}"


def test_ch05_names_the_backend_of_the_reference_figure() -> None:
    """The chapter is about TensorFlow, but its reference was measured with Keras on another
    backend (recorded in the results' provenance): the prose must name that backend."""
    backends = result("cnn_h200_jax.json")["provenance"]["keras_backends"]
    assert backends and "tensorflow" not in backends
    cells = nbformat.read(ROOT / "course" / "05-cnn-tensorflow.ipynb", as_version=4).cells
    prose = " ".join(cell.source for cell in cells if cell.cell_type == "markdown")
    for backend in backends:
        assert re.search(rf"\b{re.escape(backend)}\b", prose, re.IGNORECASE), backend


def test_ch06_one_gpu_wins_small_sums_and_four_win_large_ones() -> None:
    reduce = result("multigpu_h200.json")["results"]["reduce"]
    times = reduce["times_s"]
    assert (
        times["10000000"]["1"] < times["10000000"]["4"]
    )  # a few million values per GPU: one GPU wins
    assert times["750000000"]["4"] < times["750000000"]["1"] / 3  # large sums scale


def _lesson(name: str) -> dict[str, Any]:
    data = result("lessons.json")
    entry = data["results"][name]
    if "skipped" in entry:
        pytest.skip(
            f"lessons.json was recorded without a GPU ({entry['skipped']}); "
            "run `python -m demos bench lessons` on a GPU to check this claim"
        )
    return entry


def test_ch02_two_equal_branches_split_by_lane_cost_about_twice() -> None:
    assert 1.5 < _lesson("divergence")["ratio"] < 2.5


def test_ch04_coalescing_matters_with_32x8_blocks_and_not_with_8x8() -> None:
    coalescing = _lesson("coalescing")
    assert coalescing["32x8"]["ratio"] > 1.3
    assert 0.8 < coalescing["8x8"]["ratio"] < 1.25


def test_ch03_pinned_copies_fastest_fresh_pageable_slowest() -> None:
    copies = _lesson("copies")
    assert (
        copies["pinned"]["median_ms"]
        < copies["touched_pageable"]["median_ms"]
        < copies["fresh_pageable"]["median_ms"]
    )


def test_ch01_published_h200_memory_is_more_than_the_driver_reports() -> None:
    driver = result("distance.json")["environment"]["gpus"][0]["total_memory_bytes"]
    assert driver / 2**30 < spec()["memory_gb"]  # chapter 1 prints the driver's 139.8 GiB
    assert "source" in spec() and spec()["source"].startswith("NVIDIA")


def test_ch03_the_expansion_cancels_and_direct_subtraction_does_not() -> None:
    from demos.distance.generic import distance_matrix

    for run in result("distance.json")["results"]["runs"]:
        if "max_abs_error" not in run:
            continue
        if run["backend"] in ("numpy", "cupy"):  # the expanded square
            assert 0 < run["max_abs_error"] < 2e-15, run
        if run["backend"] == "numba-cpu":  # subtracting coordinates directly
            assert run["max_abs_error"] == 0, run
    x = np.random.default_rng(0).random((1000, 3)).astype(np.float32)
    d = distance_matrix(x, x)
    assert d.dtype == np.float32
    assert np.any(np.diag(d) != 0) and d.min() < 0  # "non-zero diagonals and negative entries"


def test_ch03_parallel_cpu_at_small_n_is_overhead_not_work() -> None:
    assert (
        result("distance.json")["environment"]["cpu_count"] == 16
    )  # "16 on the reference machine"
    parallel_64 = distance_run("numba-cpu-parallel", 64, "host_to_host")
    # "nearly as much as at n = 4096", for 4,096 times fewer entries
    assert parallel_64 > 0.5 * distance_run("numba-cpu-parallel", 4096, "host_to_host")
    assert parallel_64 > 100 * distance_run("numba-cpu", 64, "host_to_host")
    # "not even steady within one size"
    assert parallel_64 > 10 * distance_run("numba-cpu-parallel", 64, "host_to_host", "min_s")
    parallel_1024 = distance_run("numba-cpu-parallel", 1024, "host_to_host")
    assert parallel_1024 > 5 * distance_run("numba-cpu", 1024, "host_to_host")


def _warp_sectors(block: tuple[int, int], rows_on_x: bool, n: int = 4096) -> int:
    """Sectors one warp of a (bx, by) block stores into an n x n float64 matrix."""
    from demos.lessons.coalescing import sectors_touched

    bx, _ = block
    lanes = [(t % bx, t // bx) for t in range(32)]  # (threadIdx.x, threadIdx.y) of warp 0
    cells = [(x, y) if rows_on_x else (y, x) for x, y in lanes]  # (row, column)
    return sectors_touched([(row * n + column) * 8 for row, column in cells])


def test_ch04_warp_sectors_as_the_prose_counts_them() -> None:
    assert _warp_sectors((32, 8), rows_on_x=True) == 32
    assert _warp_sectors((32, 8), rows_on_x=False) == 8
    # 8 x 8 blocks: 8 rows of 4 columns against 4 rows of 8 columns, 8 full sectors either way
    assert _warp_sectors((8, 8), rows_on_x=True) == _warp_sectors((8, 8), rows_on_x=False) == 8


def test_ch04_the_distance_kernel_has_fewer_operations_per_byte_than_the_gpu_offers() -> None:
    offered = spec()["tflops"]["H200 SXM"]["fp64"] / spec()["memory_bandwidth_tb_per_s"]
    assert 6.5 < offered < 7.5  # "about seven operations in the time one byte moves"
    needed = 8 / 8  # eight operations per 8-byte entry written, for d = 3
    assert needed < offered


def test_ch04a_ncu_dram_column_is_in_mb_and_both_kernels_write_alike() -> None:
    ncu = result("ncu_kernels_h200.json")
    assert ncu["parameters"]["units"]["DRAM bytes written"] == "MB"
    naive, coalesced = ncu_row("naive"), ncu_row("coalesced")
    matrix_mb = 8 * ncu["parameters"]["n"] ** 2 / 1e6
    for row in (naive, coalesced):
        assert 0.5 * matrix_mb < row["DRAM bytes written"] < matrix_mb
    assert abs(naive["DRAM bytes written"] / coalesced["DRAM bytes written"] - 1) < 0.1
    assert naive["threads per block"] == 1 and coalesced["threads per block"] == 256


def test_ch04a_two_streams_reach_the_model_when_compute_and_copy_are_equal() -> None:
    compute, copy, _ = overlap_per_block()
    run = profiling("overlap")
    one, two = run["1_streams"]["wall_ms"], run["2_streams"]["wall_ms"]
    assert abs(compute / copy - 1) < 0.1  # "calibrated to take about as long as its copy"
    assert two < 0.6 * one  # "two streams approach half the one-stream time"
    assert abs(two / two_stream_model_ms() - 1) < 0.05
    assert run["2_streams"]["copy_overlapped_ms"] > 0.8 * run["2_streams"]["copy_ms"]


def test_ch04b_the_sweep_runs_copy_is_a_little_below_section_5s() -> None:
    """The prose: a little below section 5's copy; each table uses its own run's copy."""
    sweep = result("inflight_h200.json")["results"]["copy_bandwidth"]["bytes_moved_per_s"]
    assert 0.9 < sweep / (copy_tb_per_s() * 1e12) < 1


def test_ch04b_chapter6_kernel_has_the_same_threads_but_wider_loads() -> None:
    from demos.multigpu import reduce
    from demos.patterns import kernels

    h200 = {"MaxThreadsPerMultiProcessor": 2048, "MaxBlocksPerMultiprocessor": 32}  # CC 9.0
    assert reduce.BLOCK == kernels.BLOCK == 256 and reduce.blocks_per_multiprocessor(h200) == 8
    patterns = result("patterns_h200.json")
    sms = patterns["environment"]["gpus"][0]["multiprocessors"]
    assert patterns["results"]["max_blocks"] == 8 * sms
    assert all(r["blocks"] == 8 * sms for r in patterns["results"]["reduction"] if "blocks" in r)
    assert "float4" in reduce._KERNELS
    assert copy_tb_per_s() < chapter6_sum_tb_per_s() < spec()["memory_bandwidth_tb_per_s"]


def _scan_reference() -> dict[str, Any]:
    """demos/results/scan_h100.json's results; the test is skipped (named) while it is missing."""
    from demos import shipped_results

    data = shipped_results.load("scan_h100.json")
    if data is None:
        pytest.skip("demos/results/scan_h100.json is not measured yet: python -m demos bench scan")
    return data["results"]


def test_ch04c_two_passes_cap_the_scan_at_half_a_copy_and_the_library_wins() -> None:
    """Chapter 4c: the three launches read and write the array twice (at most about half the
    copy's rate); cupy.cumsum, one pass, is faster."""
    from demos.patterns import scan_bench

    results = _scan_reference()
    course = scan_bench.find(results["scan"], scan_bench.COURSE_SCAN)
    library = scan_bench.find(results["scan"], scan_bench.LIBRARY)
    assert course["fraction_of_copy"] < 0.55
    assert library["ms"] < course["ms"]


def test_ch04c_the_caches_do_the_tiles_work_in_one_dimension() -> None:
    """Chapter 4c: in the 1-D stencil the shared tile is no win at either radius on the
    reference GPU (its L1 cache serves the neighbours' loads), as the prose after the table
    says."""
    from demos.patterns import scan_bench

    assert scan_bench.STENCIL_TABLE.expect.holds(_scan_reference())


def test_ch04d_roofline_reading_holds_for_the_reference_points() -> None:
    """Chapter 4d's reading of its roofline: memory-bound kernels under the slope, the matrix
    products far right of the ridge and far below the roof except cuBLAS, and the naive product's
    issued-load point above the DRAM slope (its caches answer loads)."""
    from demos.patterns import roofline

    roof = roofline.roofs("NVIDIA H200")
    found = {p["label"]: p for p in roofline.reference_points()}
    slope = lambda p: p["intensity"] * roof["bandwidth"]  # noqa: E731
    for label in ("sum: tree (shared memory)", "sum: cupy.sum", "histogram: shared memory"):
        assert found[label]["ops_per_s"] < slope(found[label])
    atomics = found["histogram: global atomics"]
    assert atomics["ops_per_s"] < 0.01 * slope(atomics)
    assert found["distance: best"]["ops_per_s"] > 2 * found["distance: coalesced"]["ops_per_s"]
    for name in ("naive", "tiled (shared memory)", "cupy.matmul (cuBLAS)"):
        assert found[f"matmul: {name}"]["intensity"] > 10 * roofline.ridge(roof)
    assert found["matmul: cupy.matmul (cuBLAS)"]["ops_per_s"] > 0.6 * roof["float32"]
    assert found["matmul: tiled (shared memory)"]["ops_per_s"] < 0.2 * roof["float32"]
    naive = found["matmul: naive, loads issued"]
    assert naive["ops_per_s"] > slope(naive)


def test_ch05_bfloat16_barely_helps_at_batch_32() -> None:
    ratio = cnn("cnn_h200_jax.json", 32, "mixed_bfloat16") / cnn("cnn_h200_jax.json", 32, "float32")
    assert 0.95 < ratio < 1.1  # "it gained almost nothing"
