"""demos.lessons: the measured lessons compute the right thing (simulator on CPU, GPU where there is
one).

Timings are only meaningful on a GPU; here the kernels are checked against
NumPy, the sector arithmetic against hand counts, and the command's JSON for
its honest record of what it skipped.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numba import cuda

from demos.lessons import bench, coalescing, copies, divergence, numpy_baseline


def test_a_float64_warp_store_spans_8_sectors_coalesced_and_32_strided() -> None:
    sectors = coalescing.warp_sectors(4096)
    assert sectors == {"rows_on_x": 32, "columns_on_x": 8, "bytes_used": 256}
    assert coalescing.sectors_touched([0, 8, 16, 24, 32]) == 2


@pytest.mark.parametrize(
    "kernel, by_warp", [(divergence.split_by_lane, False), (divergence.split_by_warp, True)]
)
def test_divergence_kernels_do_the_same_work_as_numpy(kernel, by_warp: bool) -> None:
    out = cuda.to_device(np.ones(96, dtype=np.float32))
    kernel[3, 32](out, 5)
    np.testing.assert_allclose(out.copy_to_host(), divergence.expected(96, 5, by_warp), rtol=1e-5)


def test_numpy_baseline_parts_add_up_and_reused_output_is_exact() -> None:
    result = numpy_baseline.run(n=64, repeats=1)
    assert result["bytes_per_matrix"] == 64 * 64 * 8
    assert all(result[key] > 0 for key in result if key.endswith("_s"))


def test_command_records_skipped_gpu_lessons_with_the_reason(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(bench.hardware, "has_gpu", lambda: False)
    results = bench.run_lessons(("divergence", "numpy_baseline"), numpy_n=32, repeats=1)
    assert results["divergence"]["skipped"].startswith("needs a CUDA GPU")
    assert results["numpy_baseline"]["n"] == 32


@pytest.mark.gpu
def test_gpu_lessons_measure_what_the_chapters_claim(tmp_path) -> None:
    results = bench.run_lessons(bench.GPU_LESSONS, numpy_n=256, repeats=3)
    assert results["divergence"]["ratio"] > 1.3  # both branches run one after the other
    assert results["coalescing"]["32x8"]["ratio"] > 1.2  # strided stores cost more sectors
    copies = results["copies"]
    assert copies["pinned"]["median_ms"] < copies["fresh_pageable"]["median_ms"]


def test_shipped_lessons_json_records_its_hardware() -> None:
    from demos.shipped_results import RESULTS_DIR

    data = json.loads((RESULTS_DIR / "lessons.json").read_text())
    assert data["benchmark"] == "lessons"
    assert "gpus" in data["environment"] and "cpu_count" in data["environment"]
    for lesson in ("divergence", "coalescing", "copies"):
        entry = data["results"][lesson]
        assert ("skipped" in entry) == (not data["environment"]["gpus"])


@pytest.mark.gpu
@pytest.mark.parametrize("module", [divergence, coalescing, copies], ids=lambda m: m.__name__)
def test_live_lesson_sized_for_this_gpu_shows_its_effect(module) -> None:
    """What a chapter prints on a GPU node: the lesson at the size chosen from this GPU."""
    result = module.live(repeats=5)
    assert module.TABLE.expect.holds(result), f"{module.TABLE.expect.claim}: {result}"


@pytest.mark.gpu
def test_overlap_hides_most_of_the_copies_behind_compute() -> None:
    import cupy as cp

    from demos.profiling import bench as profiling_bench
    from demos.profiling.live import OVERLAP_TABLE

    result = profiling_bench.overlap(cp, chunk_bytes=16 * 2**20, chunks=8)
    assert result["correct"]
    assert OVERLAP_TABLE.expect.holds(result), result["2_streams"]["copy_overlapped_ms"]
