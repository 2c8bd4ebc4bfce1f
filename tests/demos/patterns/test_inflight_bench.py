"""Chapter 4b's bytes-in-flight sweep: the benchmark's core and its table.

The core runs here on NumPy arrays in the simulator at tiny sizes (every sum
checked against float64, every row of the chapter's table filled); the command
without a GPU, and the chapter without the H200 reference, are tested with
matmul's in test_bench_commands.py.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers and shuffles)
from demos import live, provenance, shipped_results
from demos.patterns import inflight, inflight_bench
from helpers import ROOT


def _wall_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


@pytest.fixture(scope="module")
def small() -> dict:
    """The sweep on NumPy in the simulator: one multiprocessor of 128 threads."""
    return inflight_bench.measure(
        np,
        _wall_ms,
        700,
        inflight.wide_sum,
        loads=(1, 2),
        threads=(32, 64),
        multiprocessors=1,
        threads_per_multiprocessor=128,
        peak=1e12,
    )


def test_the_core_checks_every_sum_and_fills_the_grid_to_the_multiprocessor(small) -> None:
    assert small["all_correct"] and small["n"] == 700 and small["bytes"] == 2800
    assert [(r["threads"], r["loads"], r["blocks"], r["fill"]) for r in small["sweep"]] == [
        (32, 1, 4, 1.0),
        (64, 1, 2, 1.0),
        (32, 1, 1, 0.25),  # part-filled: a quarter of the multiprocessor's 128 threads
        (32, 1, 1, 0.125),  # at least one block per multiprocessor
        (32, 2, 4, 1.0),
        (64, 2, 2, 1.0),
        (32, 2, 1, 0.25),
        (32, 2, 1, 0.125),
    ]
    for r in [*small["sweep"], small["library"]]:
        assert r["relative_error"] < 1e-6 and r["ms"] > 0
        assert r["fraction_of_copy"] == pytest.approx(
            r["read_bytes_per_s"] / small["copy_bandwidth"]["bytes_moved_per_s"]
        )
        assert r["fraction_of_peak"] == pytest.approx(r["read_bytes_per_s"] / 1e12)
    assert small["library"]["name"] == "numpy.sum"


def test_the_table_shows_every_configuration_measured(small) -> None:
    table = inflight_bench.table((1, 2), (32, 64))
    for row in table.rows:
        assert row.value(small) is not None, row.label
    cell = table.rows[3].value(small)
    assert "GB/s =" in cell and "% of copy" in cell and "% of peak" in cell
    assert table.expect.holds(small) in (True, False)
    without_one = inflight_bench.table((2, 4), (256,))
    assert live._judge(without_one.expect, small) is None  # nothing to compare: not judged


def test_part_filled_rows_take_their_share_of_every_multiprocessor() -> None:
    """Why: on a GPU whose memory answers soon (an H100) one load per thread already nears the
    copy's rate on full multiprocessors; with fewer threads each, more loads per thread show."""
    assert inflight_bench.blocks_for_fill(256, 1.0, 132, 2048) == 132 * 8
    assert inflight_bench.blocks_for_fill(256, 0.25, 132, 2048) == 132 * 2
    assert inflight_bench.blocks_for_fill(256, 0.125, 132, 2048) == 132
    assert inflight_bench.blocks_for_fill(1024, 0.125, 132, 2048) == 132  # never no block
    for bad in (0, 1.5, -0.25):
        with pytest.raises(ValueError, match="share"):
            inflight_bench.blocks_for_fill(256, bad, 132, 2048)
    assert inflight_bench.part_threads((128, 256)) == 256
    assert inflight_bench.part_threads((512, 64)) == 64


def test_the_lesson_is_judged_on_the_part_filled_rows(small) -> None:
    table = inflight_bench.table((1, 2), (32, 64))
    labels = [row.label for row in table.rows]
    assert "32 threads on 1/8 of each SM, LOADS = 2" in labels
    assert "1/8" in table.expect.claim

    def faster(fill: float, gain: float) -> dict:
        sweep = [{**r} for r in small["sweep"]]
        for r in sweep:
            if r["fill"] == fill and r["loads"] == 2:
                one = next(o for o in sweep if o["fill"] == fill and o["loads"] == 1)
                r["read_bytes_per_s"] = one["read_bytes_per_s"] * gain
        return {**small, "sweep": sweep}

    assert table.expect.holds(faster(0.125, 2.0)) is True
    assert table.expect.holds(faster(0.125, 1.0)) is False
    # a reference measured before the part-filled rows existed
    before = [{k: v for k, v in r.items() if k != "fill"} for r in small["sweep"] if r["fill"] == 1]
    old = {**small, "sweep": before}
    assert live._judge(table.expect, old) is None
    assert table.rows[3].value(old) is not None and table.rows[-3].value(old) is None


def test_a_wrong_sum_is_marked_wrong_in_the_table(small) -> None:
    record = {**small["sweep"][0], "correct": False}
    assert inflight_bench._cell(record).endswith("WRONG")


def test_the_published_peak_comes_from_the_specs_for_the_boards_it_describes() -> None:
    assert inflight_bench.published_peak("NVIDIA H200") == pytest.approx(4.8e12)
    assert inflight_bench.published_peak("NVIDIA H100 80GB HBM3") == pytest.approx(3.35e12)
    assert inflight_bench.published_peak("NVIDIA H100 PCIe") is None
    assert inflight_bench.published_peak("no GPU") is None


def test_predictions_are_printed_beside_the_measurement(capsys) -> None:
    def record(threads: int, loads: int, rate: float) -> dict:
        return {"threads": threads, "loads": loads, "read_bytes_per_s": rate,
                "fraction_of_copy": rate / 4e12}  # fmt: skip

    result = {"sweep": [record(256, 1, 2e12), record(256, 4, 3e12), record(512, 4, 3.3e12)]}
    inflight_bench.compare_prediction({1: 0.5, 4: "0.9?", 8: None}, False, result)
    said = capsys.readouterr().out
    assert "0.50" in said and "0.75" in said and "0.9?" in said
    assert "at most 10 %" in said and "does not" in said
    inflight_bench.compare_prediction({1: None}, None, result)
    assert "set block_size_matters" in capsys.readouterr().out
    inflight_bench.compare_prediction({1: 0.5}, True, None)
    assert "no reference yet" in capsys.readouterr().out


def test_the_shipped_reference_shows_the_lesson() -> None:
    data = shipped_results.load(inflight_bench.REFERENCE)
    if data is None:
        pytest.skip(f"demos/results/{inflight_bench.REFERENCE} is not measured yet")
    results = data["results"]
    assert data["parameters"]["quick"] is False and results["all_correct"]
    assert data["provenance"]["sources"] == inflight_bench.SOURCES
    full = [r for r in results["sweep"] if r.get("fill", 1.0) == 1.0]
    assert len(full) == len(inflight_bench.LOADS) * len(inflight_bench.THREADS)
    assert "H200" in live.reference(inflight_bench.REFERENCE, "results").machine
    assert provenance.provenance_of(ROOT / "demos" / "results" / inflight_bench.REFERENCE)


@pytest.mark.gpu
def test_the_benchmark_runs_quick_on_a_gpu() -> None:
    result = inflight_bench.run(quick=True, loads=(1, 4), threads=(256, 1024))
    assert result["all_correct"], [r for r in result["sweep"] if not r["correct"]]
    assert all(r["ms"] > 0 and r["fraction_of_copy"] > 0 for r in result["sweep"])
    assert result["threads_per_multiprocessor"] >= 1024 and result["multiprocessors"] > 0
