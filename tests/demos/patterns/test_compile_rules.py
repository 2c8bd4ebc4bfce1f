"""The array-size rule a GPU compiler applies and the simulator does not (seen on an H100 with
numba-cuda 0.30: ``shared.array(BLOCK + 2 * RADIUS, ...)`` fails to compile, ``TILE`` and
``2 * 64`` compile)."""

from __future__ import annotations

import importlib.util

from numba import cuda, float32

from demos.checks import ANSWERS_DIR, check
from demos.patterns.compile_rules import computed_array_sizes
from demos.patterns.simulator import python_function

BLOCK = 64
RADIUS = 1
TILE = BLOCK + 2 * RADIUS


@cuda.jit
def _sum_of_constants(x):
    tile = cuda.shared.array(BLOCK + 2 * RADIUS, float32)
    tile[cuda.threadIdx.x] = x[0]


@cuda.jit
def _one_constant(x):
    tile = cuda.shared.array(TILE, float32)
    got = cuda.local.array((2, BLOCK), float32)
    tile[cuda.threadIdx.x] = x[0] + got[0, 0]


@cuda.jit
def _numbers_only(x):
    tile = cuda.shared.array(2 * 64, float32)
    dynamic = cuda.shared.array(0, float32)
    tile[cuda.threadIdx.x] = x[0] + dynamic[0]


@cuda.jit
def _from_the_input(x):
    tile = cuda.shared.array(x.shape[0], float32)
    tile[0] = x[0]


def test_sizes_a_gpu_cannot_read_as_constants_are_named() -> None:
    assert computed_array_sizes(python_function(_sum_of_constants)) == ["BLOCK + 2 * RADIUS"]
    assert computed_array_sizes(python_function(_from_the_input)) == ["x.shape[0]"]


def test_sizes_a_gpu_compiles_pass() -> None:
    assert computed_array_sizes(python_function(_one_constant)) == []
    assert computed_array_sizes(python_function(_numbers_only)) == []


def test_a_stencil_with_a_computed_tile_fails_its_check_with_the_fix_named(
    tmp_path, capsys
) -> None:
    """As a notebook cell defines it: IPython keeps a cell's source where inspect finds it, as
    a module file does here."""
    cell = tmp_path / "student_cell.py"
    source = (ANSWERS_DIR / "stencil_shared.py").read_text(encoding="utf-8")
    one_constant = "cuda.shared.array(TILE, float32)"
    assert one_constant in source
    computed = "cuda.shared.array(STENCIL_BLOCK + 2 * RADIUS, float32)"
    cell.write_text(source.replace(one_constant, computed), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("student_cell", cell)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    check("stencil_shared", module.stencil_shared)
    said = capsys.readouterr().out
    assert said.startswith("✗ stencil_shared")
    assert "TILE = STENCIL_BLOCK + 2 * RADIUS" in said
