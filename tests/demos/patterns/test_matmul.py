"""Chapter 4b's matrix multiply: the kernels against NumPy, their loads counted, the benchmark.

The naive kernel reads every operand from global memory (2 k loads per output),
the tiled one each element once per tile step (2 ceil(k / TILE) per output): the
counts in the simulator must be exactly those the chapter's prediction cell and
the benchmark's records state. The benchmark's core runs here on NumPy arrays in
the simulator (the command without a GPU, and the chapter without the reference:
test_bench_commands.py).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers)
from demos import live, provenance, shipped_results
from demos.patterns import matmul, matmul_bench, reports

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("method, tile", [("naive", 16), ("tiled", 16), ("tiled", 8)])
def test_both_kernels_match_numpy_on_sizes_that_are_no_multiple_of_the_tile(
    method: str, tile: int, rng: np.random.Generator
) -> None:
    for n, k, m in [(1, 1, 1), (17, 9, 5), (6, 33, 18)]:
        a, b = rng.random((n, k)), rng.random((k, m))
        c = matmul.matmul(a, b, method, tile)  # float64 in, float64 out
        np.testing.assert_allclose(c, a @ b, rtol=1e-12)
        single = matmul.matmul(a.astype(np.float32), b.astype(np.float32), method, tile)
        assert single.dtype == np.float32
        np.testing.assert_allclose(single, a @ b, rtol=1e-5)


def test_bad_input_gets_one_clear_sentence() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        matmul.matmul(np.ones((2, 2)), np.ones((2, 2)), "fast")
    with pytest.raises(ValueError, match="has 3 rows"):
        matmul.matmul(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(TypeError, match="one dtype"):
        matmul.matmul(np.ones((2, 2)), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        matmul.naive_matmul_kernel("int32")
    with pytest.raises(ValueError, match="at most 1,024 threads"):
        matmul.tiled_matmul_kernel(64)


def test_counted_loads_are_the_ones_the_chapter_states() -> None:
    tile, k = 8, 32
    a, b = np.ones((tile, k), np.float32), np.ones((k, 2 * tile), np.float32)
    naive = reports.matmul_report(matmul.naive_matmul_kernel(), a, b, tile)
    tiled = reports.matmul_report(matmul.tiled_matmul_kernel(tile), a, b, tile)
    for report in (naive, tiled):
        np.testing.assert_array_equal(report["product"], a @ b)
        assert report["writes_to_c"] == a.shape[0] * b.shape[1]
    assert naive["loads_per_output"] == matmul.global_loads_per_output(k, "naive") == 2 * k
    assert tiled["loads_per_output"] == matmul.global_loads_per_output(k, "tiled", tile) == 8
    assert naive["most_reads_of_an_a"] == b.shape[1]  # once per output of its row
    assert tiled["most_reads_of_an_a"] == 2  # once per block column of c
    assert naive["shared_arrays"] == 0 and tiled["shared_arrays"] > 0


def test_the_tiled_kernel_has_two_barriers_per_step_and_no_race() -> None:
    a, b = np.ones((9, 20), np.float32), np.ones((20, 11), np.float32)
    report = reports.matmul_report(matmul.tiled_matmul_kernel(8), a, b, 8)
    steps = math.ceil(20 / 8)
    assert report["tile_steps"] == steps
    assert report["fewest_barriers_per_thread"] == report["most_barriers_per_thread"] == 2 * steps
    assert report["blocks_with_uneven_barriers"] == 0
    for race in ("racy_shared_writes", "racy_shared_reads", "uninitialised_shared_reads"):
        assert report[race] == 0, race


def test_tile_of_reads_the_constant_a_kernel_was_compiled_with() -> None:
    assert matmul.tile_of(matmul.tiled_matmul_kernel(4)) == 4
    assert matmul.tile_of(matmul.naive_matmul_kernel()) == matmul.TILE  # nothing to read

    from numba import cuda

    tile_edge_named_otherwise = 8

    @cuda.jit
    def kernel(a, b, c):
        c[0, 0] = tile_edge_named_otherwise

    assert matmul.tile_of(kernel, default=16) == 16


def test_the_prediction_cell_prints_the_counts_beside_the_guesses(capsys) -> None:
    counted = matmul_bench.compare_loads(
        matmul.naive_matmul_kernel(), matmul.tiled_matmul_kernel(8), 8192, "512?", 4
    )
    assert counted == {"naive": 2 * 32, "tiled": 2 * 4}  # k = 4 tiles of 8
    said = capsys.readouterr().out
    assert "TILE = 8" in said and "8,192" in said and "1,024" in said  # at k = 4096
    assert "512?" in said and "4x" in said
    matmul_bench.compare_loads(
        matmul.naive_matmul_kernel(), matmul.tiled_matmul_kernel(8), *[None] * 3
    )
    assert "You predicted" not in capsys.readouterr().out


def _wall_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def test_the_benchmark_core_runs_on_numpy_in_the_simulator_and_fills_the_table() -> None:
    result = matmul_bench.measure(np, _wall_ms, 20)
    assert result["n"] == 20 and result["tile"] == matmul.TILE
    names = [r["name"] for r in result["kernels"]]
    assert names == [matmul_bench.NAIVE, matmul_bench.TILED, matmul_bench.LIBRARY]
    assert all(r["correct"] and r["max_relative_error"] < 1e-6 for r in result["kernels"])
    assert result["kernels"][0]["global_loads_per_output"] == 40
    assert result["kernels"][1]["global_loads_per_output"] == 4
    for row in matmul_bench.TABLE.rows:
        assert row.value(result) is not None, row.label


def test_the_benchmark_times_the_students_kernel_with_its_own_tile() -> None:
    result = matmul_bench.measure(np, _wall_ms, 10, tiled=matmul.tiled_matmul_kernel(4))
    tiled = result["kernels"][1]
    assert result["tiled_kernel"] == "yours" and tiled["tile"] == 4 and tiled["correct"]
    assert tiled["block"] == [4, 4] and tiled["grid"] == [3, 3]


def test_the_shipped_reference_shows_the_lesson() -> None:
    data = shipped_results.load(matmul_bench.REFERENCE)
    if data is None:
        pytest.skip(f"demos/results/{matmul_bench.REFERENCE} is not measured yet")
    results = data["results"]
    assert data["parameters"]["quick"] is False and results["n"] == matmul_bench.N
    assert data["provenance"]["sources"] == matmul_bench.SOURCES
    assert all(r["correct"] for r in results["kernels"])
    assert matmul_bench.TABLE.expect.holds(results), "the tiled kernel is not faster"
    assert "H200" in live.reference(matmul_bench.REFERENCE, "results").machine
    assert provenance.provenance_of(ROOT / "demos" / "results" / matmul_bench.REFERENCE)


@pytest.mark.gpu
def test_the_benchmark_runs_quick_on_a_gpu() -> None:
    result = matmul_bench.run(quick=True)
    assert all(r["correct"] for r in result["kernels"])
    assert result["kernels"][1]["ms"] > 0
