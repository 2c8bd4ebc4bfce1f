"""Chapter 4c's scan and stencil kernels against NumPy, their work counted, and the benchmark.

The kernels run in the simulator on lengths that are no multiple of the block
(one element, one block exactly, several levels of totals); the additions the
chapter's prediction cell prints must be the ones the algorithms make; the
benchmark's core runs on NumPy at tiny sizes and fills both of the chapter's
tables; ``python -m demos bench scan`` refuses without a GPU and the chapter's
cells say that the reference is missing instead of breaking.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers)
from demos import hardware, live, provenance, shipped_results
from demos.__main__ import COMMANDS
from demos.patterns import scan, scan_bench, stencil
from demos.patterns.simulator import AccessLog, simulated

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("n", [1, 5, 32, 33, 100, 1100])
def test_the_scan_of_any_length_is_numpys_cumsum(n: int) -> None:
    values = np.random.default_rng(n).integers(-9, 10, n).astype(np.int32)
    np.testing.assert_array_equal(scan.inclusive_scan(values, 32), np.cumsum(values))


def test_the_block_scan_has_two_barriers_per_level_and_no_race() -> None:
    block, n = 64, 150
    values = np.arange(n, dtype=np.int32)
    out, totals = np.zeros(n, np.int32), np.zeros(3, np.int32)
    log = AccessLog()
    with log.counting():
        simulated(scan.block_scan_kernel(block))[3, block](
            log.wrap(values, "values"), log.wrap(out, "out"), log.wrap(totals, "totals")
        )
    assert log.problems() == []
    assert log.barrier_range() == (2 * 6 + 2, 2 * 6 + 2)  # load, 6 up, clear, 6 down
    np.testing.assert_array_equal(totals, [values[k : k + block].sum() for k in (0, 64, 128)])


def test_bad_input_gets_one_clear_sentence() -> None:
    with pytest.raises(TypeError, match="must be int32"):
        scan.inclusive_scan(np.ones(4))
    with pytest.raises(ValueError, match="1-D"):
        scan.inclusive_scan(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="power of two"):
        scan.block_scan_kernel(48)
    with pytest.raises(ValueError, match="unknown method"):
        scan.scan_adds(8, "fast")
    with pytest.raises(ValueError, match="power of two"):
        scan.sweep_steps([1, 2, 3])
    with pytest.raises(TypeError, match="float32"):
        stencil.stencil(np.ones(4))
    with pytest.raises(ValueError, match="radius"):
        stencil.stencil_shared_kernel(32, 0)
    assert len(scan.inclusive_scan(np.zeros(0, np.int32))) == 0


def test_additions_are_the_ones_the_chapter_counts() -> None:
    assert scan.scan_adds(1024, "sequential") == 1023
    assert scan.scan_adds(1024, "work-efficient") == 2 * 1023
    assert scan.scan_adds(8, "doubling") == 7 + 6 + 4  # steps d = 1, 2, 4
    steps = scan.sweep_steps([3, 1, 4, 1, 5, 9, 2, 6])
    np.testing.assert_array_equal(steps[-1][1], np.cumsum([3, 1, 4, 1, 5, 9, 2, 6]))
    np.testing.assert_array_equal(
        steps[-2][1], np.cumsum([3, 1, 4, 1, 5, 9, 2, 6]) - [3, 1, 4, 1, 5, 9, 2, 6]
    )


def test_with_constants_and_block_of_read_the_kernels_constants() -> None:
    from numba import cuda

    kernel = scan.block_scan_kernel(32)
    assert scan.block_of(kernel) == 32  # the course kernel closes over its block
    namespace = {"cuda": cuda, "BLOCK": 64}
    exec("def f(out):\n    out[0] = BLOCK\n", namespace)  # noqa: S102 - a kernel as a cell makes it
    made = cuda.jit(namespace["f"])
    assert scan.block_of(made) == 64
    out = np.zeros(1, np.int32)
    scan.with_constants(made, BLOCK=128)[1, 1](out)
    assert out[0] == 128


@pytest.mark.parametrize("radius", [1, 3])
@pytest.mark.parametrize("method", ["global", "shared"])
def test_both_stencils_match_numpy_at_edges_and_borders(method: str, radius: int) -> None:
    for n in (1, 2 * radius, 2 * radius + 1, 70):
        x = np.random.default_rng(n).random(n).astype(np.float32)
        got = stencil.stencil(x, method, radius, 32)
        np.testing.assert_allclose(got, stencil.reference(x, radius), rtol=1e-5)
    assert stencil.reference(np.arange(5.0), 1).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def _wall_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def test_the_benchmark_core_runs_on_numpy_in_the_simulator_and_fills_the_tables(capsys) -> None:
    result = scan_bench.measure(np, _wall_ms, 70)
    assert result["n"] == 70 and result["scan_kernels"] == "the course's"
    assert [r["name"] for r in result["scan"]] == [scan_bench.COURSE_SCAN, scan_bench.LIBRARY]
    assert [r["name"] for r in result["stencil"]] == list(scan_bench.STENCIL_NAMES)
    assert all(r["correct"] for r in result["scan"] + result["stencil"])
    for table in (scan_bench.SCAN_TABLE, scan_bench.STENCIL_TABLE):
        for row in table.rows:
            assert row.value(result) is not None, row.label
    scan_bench.scan_shares(result, {scan_bench.COURSE_SCAN: 0.4, scan_bench.LIBRARY: 3})
    scan_bench.stencil_shares(result, {8: True})
    said = capsys.readouterr().out
    assert "(you predicted 40 %)" in said and "(a share is 0 to 1)" in said
    assert "radius 8" in said and "it helps: yes" in said and "it helps: no guess" in said
    with pytest.raises(ValueError, match="at least 1"):
        scan_bench.measure(np, _wall_ms, 0)
    # a guess for a radius the benchmark does not run is named, not dropped silently
    scan_bench.stencil_shares(result, {1: False, 4: True})
    said = capsys.readouterr().out
    assert "guesses for radius 4, which the benchmark does not run: it runs radius 1 and 8" in said


def test_the_benchmark_times_the_students_kernels_with_their_block() -> None:
    from demos.checks import course_version

    kernel = course_version("block_scan")
    result = scan_bench.measure(np, _wall_ms, 40, kernel, course_version("add_offsets"))
    assert result["scan_kernels"] == "yours" and result["scan"][0]["block"] == 64
    assert result["scan"][0]["correct"]


def test_the_command_is_registered_and_refuses_without_a_gpu(tmp_path, capsys) -> None:
    assert COMMANDS[("bench", "scan")][0] == scan_bench.__name__
    for source in scan_bench.SOURCES:
        assert (ROOT / source).is_file(), source
    if hardware.cupy_available():
        pytest.skip("this machine has a GPU: the command would measure")
    assert scan_bench.main(argparse.Namespace(output=tmp_path, quick=True)) == 1
    assert "needs a GPU with CuPy" in capsys.readouterr().out
    assert not (tmp_path / "scan.json").exists()


def test_without_the_reference_the_chapter_says_it_is_not_measured_yet(
    tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(shipped_results, "RESULTS_DIR", tmp_path)
    assert scan_bench.reference() is None
    said = capsys.readouterr().out
    assert "has not been measured yet" in said and "python -m demos bench scan" in said
    for table in (scan_bench.SCAN_TABLE, scan_bench.STENCIL_TABLE):
        live.side_by_side(table, None, None, need="gpu")  # prints, never raises
        assert "no reference result shipped" in capsys.readouterr().out
    scan_bench.scan_shares(None)
    scan_bench.stencil_shares(None)
    assert capsys.readouterr().out.count("not been measured yet") == 2


def test_the_shipped_reference_shows_the_lesson() -> None:
    """Needs demos/results/scan_h100.json, made on a GPU node with `python -m demos bench scan`."""
    data = shipped_results.load(scan_bench.REFERENCE)
    if data is None:
        pytest.skip(f"demos/results/{scan_bench.REFERENCE} is not measured yet")
    results = data["results"]
    assert data["parameters"]["quick"] is False and results["n"] == scan_bench.N
    assert data["provenance"]["sources"] == scan_bench.SOURCES
    assert all(r["correct"] for r in results["scan"] + results["stencil"])
    assert scan_bench.SCAN_TABLE.expect.holds(results), "cupy.cumsum is not faster"
    gpu_in_name = scan_bench.REFERENCE.removesuffix(".json").rsplit("_", 1)[-1].upper()
    assert gpu_in_name in live.reference(scan_bench.REFERENCE, "results").machine
    assert provenance.provenance_of(ROOT / "demos" / "results" / scan_bench.REFERENCE)


@pytest.mark.gpu
def test_the_benchmark_runs_quick_on_a_gpu() -> None:
    result = scan_bench.run(quick=True)
    assert all(r["correct"] for r in result["scan"] + result["stencil"])
    assert all(r["ms"] > 0 for r in result["scan"])


def test_every_shared_array_size_is_one_constant_as_a_gpu_compiles_it() -> None:
    """On an H100, Numba refused ``cuda.shared.array(BLOCK + 2 * RADIUS, float32)`` (no
    implementation for array(int64, ...)): the simulator had run it. The course's kernels, the
    model answers and the chapter's cells name the size by one constant."""
    import ast
    import importlib.util

    import nbformat

    from demos.checks import ANSWERS_DIR
    from demos.patterns.compile_rules import computed_array_sizes
    from demos.patterns.simulator import python_function

    kernels = [stencil.stencil_shared_kernel(64, 2), scan.block_scan_kernel(64)]
    for name in ("block_scan", "add_offsets", "stencil_shared"):
        spec = importlib.util.spec_from_file_location(name, ANSWERS_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernels.append(getattr(module, name))
    for kernel in kernels:
        assert computed_array_sizes(python_function(kernel)) == [], kernel
    chapter = nbformat.read(ROOT / "course" / "04c-scans-and-stencils.ipynb", as_version=4)
    for cell in (c for c in chapter.cells if c.cell_type == "code"):
        for node in ast.walk(ast.parse(cell.source)):
            maker = getattr(getattr(node, "func", None), "value", None)
            if getattr(maker, "attr", "") in ("shared", "local"):
                assert isinstance(node.args[0], (ast.Name, ast.Constant)), cell.source
