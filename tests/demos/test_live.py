"""demos.live: every measurement of the chapters, live beside the reference.

Why: every measurement cell of the chapters goes through one helper, so what
it prints on a laptop (the reference alone, labelled, and why nothing was
measured), on a GPU node (both columns, the lesson's verdict) and when a
measurement fails (one line, no traceback) is tested here once. The tables the
chapters show are checked against the shipped references, so a renamed key
cannot turn a reference figure into "-" unnoticed.
"""

from __future__ import annotations

import json
import os

import pytest

from demos import checks, hardware, live, shipped_results
from demos.lessons import coalescing, copies, distance_live, divergence, numpy_baseline
from demos.multigpu import live as multigpu_live
from demos.patterns import bench as patterns_bench
from demos.profiling import live as profiling_live

TABLE = live.Table(
    "Two ways",
    (
        live.Row("fast", "fast.ms", "ms", 2),
        live.Row("ratio", lambda r: r["slow"] / r["fast"]["ms"], "x", 1),
    ),
    live.Expect("slow is slower", lambda r: r["slow"] > r["fast"]["ms"], "because of the test."),
)
REF = live.Reference(
    values={"fast": {"ms": 1.0}, "slow": 3.0}, machine="NVIDIA H200", date="2026-11-22", source="x"
)


def test_row_reads_dotted_paths_and_functions_and_shows_missing_as_a_dash() -> None:
    row = live.Row("a", "x.y", "ms", 1)
    assert row.value({"x": {"y": 2.0}}) == 2.0
    assert row.value({"x": {}}) is None and row.format(None) == "-"
    assert row.format(2.04) == "2.0 ms"
    assert live.Row("n", "n", "", 0).format(16384) == "16,384"
    assert live.Row("r", lambda r: r["a"] / r["b"]).value({"a": 1, "b": 0}) is None


def test_without_a_measurement_the_reference_is_labelled_and_nothing_is_invented(
    capsys, monkeypatch
) -> None:
    monkeypatch.setattr(live, "live_possible", lambda need="cupy": False)  # a laptop, even on a GPU
    got = live.side_by_side(TABLE, REF, None, need="numba")
    said = capsys.readouterr().out
    assert got is None
    assert "reference: NVIDIA H200, 2026-11-22" in said and "1.00 ms" in said
    assert "your GPU:" not in said and "✓" not in said
    assert "Not measured here" in said


def test_a_live_measurement_is_printed_beside_the_reference_with_the_verdict(capsys) -> None:
    got = live.side_by_side(TABLE, REF, lambda: {"fast": {"ms": 2.0}, "slow": 1.0}, need="cpu")
    said = capsys.readouterr().out
    assert got == {"fast": {"ms": 2.0}, "slow": 1.0}
    header = said.splitlines()[1]
    assert "this machine" in header and "reference: NVIDIA H200 node" in header
    assert "2.00 ms" in said and "1.00 ms" in said
    assert "✗ not on this machine" in said and "Why: because of the test." in said


def test_a_failing_measurement_says_so_in_one_line_and_shows_the_reference(capsys) -> None:
    def broken() -> dict:
        raise RuntimeError("out of memory\nlong traceback text")

    assert live.side_by_side(TABLE, REF, broken, need="cpu") is None
    said = capsys.readouterr().out
    assert "failed here (RuntimeError: out of memory)" in said and "traceback" not in said
    assert "1.00 ms" in said


def test_every_table_is_logged_for_the_gpu_node_tool(tmp_path, monkeypatch, capsys) -> None:
    log = tmp_path / "live.jsonl"
    monkeypatch.setenv(live.LOG_ENV, str(log))
    live.side_by_side(TABLE, REF, lambda: {"fast": {"ms": 0.5}, "slow": 1.0}, need="cpu")
    live.side_by_side(TABLE, None, None, need="numba", no_live="needs a profiler run")
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["lesson_holds"] is True and first["rows"][0] == {
        "label": "fast",
        "unit": "ms",
        "live": 0.5,
        "reference": 1.0,
    }
    assert second["reference_only"] == "needs a profiler run"


def test_a_reference_part_recorded_as_skipped_counts_as_missing(tmp_path, monkeypatch) -> None:
    (tmp_path / "r.json").write_text(
        json.dumps({"environment": {}, "results": {"a": {"skipped": "no GPU"}}})
    )
    monkeypatch.setattr(shipped_results, "RESULTS_DIR", tmp_path)
    assert live.reference("r.json", "results", "a") is None
    assert live.reference("missing.json") is None


# the tables the chapters print, with the shipped reference each is printed against
CHAPTER_TABLES = [
    (divergence.TABLE, live.reference("lessons.json", "results", "divergence")),
    (coalescing.TABLE, live.reference("lessons.json", "results", "coalescing")),
    (copies.TABLE, live.reference("lessons.json", "results", "copies")),
    (numpy_baseline.TABLE, live.reference("lessons.json", "results", "numpy_baseline")),
    (distance_live.SWEEP_TABLE, distance_live.reference_sweep()),
    (distance_live.SHARE_TABLE, distance_live.reference_share(4096)),
    (distance_live.OPS_TABLE, distance_live.reference_ops(4096)),
    (distance_live.MEMORY_TABLE, live.reference("distance_memory.json", "results")),
    (distance_live.LAUNCH_TABLE, distance_live.reference_kernels(4096)),
    (distance_live.TILED_TABLE, distance_live.reference_kernels(4096)),
    (distance_live.KERNELS_TABLE, distance_live.reference_kernels(16384)),
    (distance_live.CPU_TABLE, distance_live.reference_cpu_cores(4096)),
    (profiling_live.TIMING_TABLE, live.reference("profiling_h200.json", "results", "timing")),
    (profiling_live.SYNCS_TABLE, live.reference("profiling_h200.json", "results", "syncs")),
    (profiling_live.PIPELINE_TABLE, live.reference("profiling_h200.json", "results", "pipeline")),
    (profiling_live.OVERLAP_TABLE, live.reference("profiling_h200.json", "results", "overlap")),
    (profiling_live.CHUNKED_TABLE, live.reference("distance_chunked.json", "results")),
    (profiling_live.POOL_TABLE, live.reference("profiling_h200.json", "results", "pool")),
    (patterns_bench.RACY_TABLE, live.reference("patterns_h200.json", "results")),
    (patterns_bench.HISTOGRAM_TABLE, live.reference("patterns_h200.json", "results")),
    (patterns_bench.REDUCTION_TABLE, live.reference("patterns_h200.json", "results")),
    *((multigpu_live.table(s), multigpu_live.reference_of(s)) for s in multigpu_live.SCENARIOS),
]


@pytest.mark.parametrize("table, ref", CHAPTER_TABLES, ids=lambda v: getattr(v, "title", "")[:40])
def test_every_chapter_table_reads_all_its_rows_from_the_shipped_reference(table, ref) -> None:
    assert ref is not None, f"no shipped reference for {table.title!r}"
    missing = [row.label for row in table.rows if row.value(ref.values) is None]
    assert not missing, f"{table.title!r}: the reference has no value for {missing}"
    if table.expect is not None:
        assert table.expect.holds(ref.values) in (True, None), (
            f"the reference itself contradicts the lesson: {table.expect.claim}"
        )


def test_a_student_function_is_used_only_once_it_passes_its_check(capsys) -> None:
    def wrong(compute_ms, copy_ms, blocks):
        return blocks * (compute_ms + copy_ms)

    def right(compute_ms, copy_ms, blocks):
        return compute_ms + copy_ms + (blocks - 1) * max(compute_ms, copy_ms)

    chosen = checks.use_if_passed("pipelined_time", wrong)
    assert chosen is not wrong and chosen(1.0, 2.0, 3) == 7.0
    assert "uses the course's version" in capsys.readouterr().out
    assert checks.use_if_passed("pipelined_time", right) is right


def test_gpu_counts_are_powers_of_two_up_to_the_node() -> None:
    assert multigpu_live.gpu_counts(0) == []
    assert multigpu_live.gpu_counts(1) == [1]
    assert multigpu_live.gpu_counts(6) == [1, 2, 4]
    assert multigpu_live.gpu_counts(8) == [1, 2, 4, 8]
    assert "one GPU" in multigpu_live.what_more_gpus_show([1])


def test_usable_cpu_count_is_within_the_machine() -> None:
    assert 1 <= hardware.usable_cpu_count() <= (os.cpu_count() or 1)
