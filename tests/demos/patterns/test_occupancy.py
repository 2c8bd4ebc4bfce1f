"""Chapter 4d's occupancy model, its published limits and its benchmark's core.

Why: the chapter's check grades students against this model, and its table
puts the model beside the driver's answer; a rule wrong here would teach a
wrong rule. The model is tested on cases where each budget binds, against
figures NVIDIA's own tools reported for the course's kernels (Nsight Compute's
theoretical occupancy in ncu_kernels_h200.json), and the limits in
gpu_specs.json against each other. The benchmark's core runs on NumPy in the
simulator at tiny sizes, every sum checked against float64.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers and shuffles)
from demos import hardware, live, shipped_results
from demos.__main__ import COMMANDS
from demos.patterns import inflight, occupancy, occupancy_bench
from helpers import ROOT

H200 = occupancy.limits_for("9.0")
A100 = occupancy.limits_for("8.0")


@pytest.mark.parametrize(
    "registers, threads, shared, limits, factor, blocks",
    [
        (32, 256, 0, H200, "warps", 8),
        (16, 32, 0, H200, "blocks", 32),
        (64, 256, 0, H200, "registers", 4),
        (33, 256, 0, H200, "registers", 6),  # 1,056 registers per warp round up to 1,280
        (40, 96, 0, H200, "registers", 16),  # 12 warps per quarter, not 51 // 3 = 17
        (32, 128, 46000, H200, "shared memory", 4),  # 47,024 bytes with the reserved 1 KB
        (32, 256, 49152, A100, "shared memory", 3),
    ],
)
def test_each_budget_binds_where_its_rule_says(registers, threads, shared, limits, factor, blocks):
    by = occupancy.blocks_by_factor(registers, threads, shared, limits)
    assert occupancy.blocks_per_sm(registers, threads, shared, limits) == by[factor] == blocks
    assert all(v >= blocks for v in by.values())


def test_a_block_that_needs_more_registers_than_the_sm_has_cannot_run() -> None:
    assert occupancy.blocks_per_sm(128, 1024, 0, H200) == 0
    assert occupancy.blocks_per_sm(64, 1024, 0, H200) == 1


def test_the_model_gives_nsight_computes_theoretical_occupancy_of_chapter_4s_kernels() -> None:
    """Nsight Compute on the H200 (chapter 4d's prose): blocks of one thread reach one half, blocks
    of 256 threads fill the SM."""
    rows = shipped_results.load("ncu_kernels_h200.json", required=True)["results"]
    said = {r["kernel"]: (int(r["threads per block"]), r["theoretical occupancy"]) for r in rows}
    assert said == {"naive": (1, 50.0), "coalesced": (256, 100.0)}
    for threads, percent in said.values():
        assert 100 * occupancy.occupancy(32, threads, 0, H200) == percent


@pytest.mark.parametrize("limits", [H200, A100], ids=["9.0", "8.0"])
def test_largest_shared_is_the_largest_that_fits_and_smallest_stops_one_more(limits) -> None:
    for k in range(1, limits["max_blocks_per_sm"] + 1):
        most = occupancy.largest_shared(k, limits)
        assert occupancy.blocks_by_factor(0, 32, most, limits)["shared memory"] >= k
        assert occupancy.blocks_by_factor(0, 32, most + 1, limits)["shared memory"] < k
    for k in occupancy_bench.BLOCKS:
        least = occupancy.smallest_shared_for(k, limits)
        assert occupancy.blocks_per_sm(0, occupancy_bench.THREADS, least, limits) == k
        assert least <= limits["static_shared_per_block"]  # no opt-in needed at launch


def test_bad_input_gets_one_clear_error() -> None:
    with pytest.raises(ValueError, match="threads per block must be 1 to 1024"):
        occupancy.blocks_per_sm(32, 2048, 0, H200)
    with pytest.raises(ValueError, match="limits lack"):
        occupancy.blocks_per_sm(32, 256, 0, {"warp_size": 32})
    with pytest.raises(ValueError, match="gpu_specs.json lists 8.0, 9.0"):
        occupancy.limits_for("7.5")
    with pytest.raises(ValueError, match="blocks must be 1 to 32"):
        occupancy.largest_shared(0, H200)


def test_published_limits_agree_with_each_other_and_every_gpu_names_them() -> None:
    specs = shipped_results.load("gpu_specs.json", required=True)
    for limits in (H200, A100):
        assert limits["register_file_kb"] * 1024 == 4 * limits["registers_per_sm"]
        assert (
            limits["shared_per_sm"] - limits["shared_reserved_per_block"]
            == (limits["max_shared_per_block"])
        )
        assert limits["l1_and_shared_per_sm_kb"] * 1024 > limits["shared_per_sm"]
    for name, gpu in specs["gpus"].items():
        assert gpu["compute_capability"] in specs["compute_capabilities"], name
        assert gpu["l2_cache_mb"] > 0 and "memory_bandwidth_tb_per_s" in gpu
        for board, count in gpu["multiprocessors"].items():
            assert board in gpu["tflops"], (name, board)
            rates = gpu["tflops"][board]
            assert rates["bf16_tensor_dense"] == pytest.approx(
                rates["bf16_tensor_sparse"] / 2, 0.01
            )
            assert count is None or 100 < count < 200


def test_the_reference_h200_reports_the_published_limits() -> None:
    ref = shipped_results.load(occupancy_bench.REFERENCE)
    if ref is None:
        pytest.skip(f"demos/results/{occupancy_bench.REFERENCE} not measured yet")
    measured = ref["results"]["limits"]
    for key in ("max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm", "shared_per_sm"):
        assert measured[key] == H200[key], key
    assert measured["multiprocessors"] == 132
    assert math.isclose(measured["l2_cache_bytes"] / 2**20, 50, rel_tol=0.05)


def _wall_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


# A tiny multiprocessor (2 blocks of 64 threads), so that the simulator runs the sweep in seconds.
TINY = {**H200, "max_threads_per_sm": 128, "max_blocks_per_sm": 2}


@pytest.fixture(scope="module")
def small() -> dict:
    return occupancy_bench.measure(
        np, _wall_ms, 500, TINY, 1, kernel=inflight.wide_sum, loads=(1, 2), blocks=(2, 1)
    )


def test_the_sweep_sums_right_with_the_shared_memory_that_limits_it(small) -> None:
    assert small["all_correct"] and small["grid"] == 2
    rows = {(r["loads"], r["allowed_blocks_per_sm"]): r for r in small["sweep"]}
    assert set(rows) == {(1, 2), (1, 1), (2, 2), (2, 1)}
    assert rows[(1, 2)]["dynamic_shared_bytes"] == 0
    one = rows[(1, 1)]["dynamic_shared_bytes"] + occupancy_bench.STATIC_SHARED
    assert occupancy.blocks_per_sm(0, 64, one, TINY) == 1
    assert rows[(1, 1)]["occupancy"] == 0.5 and rows[(1, 2)]["occupancy"] == 1.0


def test_the_simulator_reports_no_registers_and_no_driver_answer(small) -> None:
    """Nothing compiled, nothing to report: None, never a made-up number."""
    assert [k["name"] for k in small["kernels"]] == [
        n for n, *_ in occupancy_bench._course_kernels()
    ]
    for row in small["kernels"] + small["sweep"]:
        assert row["registers"] is None and row["driver_blocks_per_sm"] is None


def test_every_row_of_the_sweep_table_is_filled(small) -> None:
    rows = occupancy_bench.sweep_table((1, 2), (2, 1)).rows
    assert len(rows) == 5 and rows[0].value(small) == 500
    for row in rows[1:]:
        text = row.value(small)
        assert text and "% occupancy" in text and "WRONG" not in text, row.label
    assert len(occupancy_bench.SWEEP_TABLE.rows) == 1 + len(occupancy_bench.LOADS) * 4


def test_prediction_is_printed_beside_the_measured_share(small, capsys) -> None:
    occupancy_bench.compare_prediction({2: 0.6}, True, small)
    said = capsys.readouterr().out
    assert "LOADS = 1:" in said and "0.60" in said
    assert "With room for 1 blocks, LOADS = 2" in said and "(you predicted: yes)" in said
    occupancy_bench.compare_prediction({}, None, None)
    assert "keep your predictions for a GPU" in capsys.readouterr().out


def test_the_command_is_registered_and_refuses_without_a_gpu(tmp_path, capsys) -> None:
    assert COMMANDS[("bench", "occupancy")][0] == occupancy_bench.__name__
    for source in occupancy_bench.SOURCES:
        assert (ROOT / source).is_file(), source
    if hardware.cupy_available():
        pytest.skip("this machine has a GPU: the command would measure")
    assert occupancy_bench.main(argparse.Namespace(output=tmp_path, quick=True)) == 1
    assert "needs a GPU with CuPy" in capsys.readouterr().out
    assert not (tmp_path / "occupancy.json").exists()


def test_without_the_reference_the_chapter_says_how_to_make_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shipped_results, "RESULTS_DIR", tmp_path)
    assert occupancy_bench.reference() is None
    said = capsys.readouterr().out
    assert "has not been measured yet" in said and "python -m demos bench occupancy" in said
    for table in (occupancy_bench.RESOURCES_TABLE, occupancy_bench.KERNEL_TABLE):
        live.side_by_side(table, None, None, need="gpu")  # prints, never raises
        assert "no reference result shipped" in capsys.readouterr().out


def test_the_reference_sweep_shows_what_the_chapter_says() -> None:
    """Chapter 4d's reading of the H200's sweep: fewer resident warps read more slowly at
    LOADS = 1, more loads per warp win back rate where few blocks fit, every sum right, and the
    model's blocks per SM are the driver's."""
    ref = shipped_results.load(occupancy_bench.REFERENCE)
    if ref is None:
        pytest.skip(f"demos/results/{occupancy_bench.REFERENCE} not measured yet")
    result = ref["results"]
    assert result["all_correct"]
    row = occupancy_bench._row
    few, full = occupancy_bench.BLOCKS[-1], occupancy_bench.BLOCKS[0]
    assert row(result, 1, full)["ms"] < 0.8 * row(result, 1, few)["ms"]
    assert row(result, 4, few)["ms"] < 0.9 * row(result, 1, few)["ms"]
    for r in result["sweep"] + result["kernels"]:
        assert r["driver_blocks_per_sm"] in (None, r["model_blocks_per_sm"]), r


def test_the_kernel_table_judges_the_model_only_where_the_driver_answered() -> None:
    holds = occupancy_bench.KERNEL_TABLE.expect.holds

    def kernels(*pairs):
        return {
            "kernels": [{"driver_blocks_per_sm": d, "model_blocks_per_sm": m} for d, m in pairs]
        }

    assert holds(kernels((None, 4))) is None
    assert holds(kernels((4, 4), (None, 2))) is True
    assert holds(kernels((4, 4), (3, 4))) is False
