"""The GPU kernels CuPy compiled for the solution seed each notebook's sandbox (grader.box)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

from grader import box as boxes
from grader import cell_budgets, sandbox

# What CuPy does with a kernel it compiled: a file in CUPY_CACHE_DIR.
_COMPILES = (
    "import os, pathlib\n"
    "pathlib.Path(os.environ['CUPY_CACHE_DIR'], 'kernel.cubin').write_text('compiled')"
)


def _solution(course: Path) -> None:
    path = course / "solutions" / "demo" / "demo.ipynb"
    path.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(_COMPILES)
    cell.metadata["nbgrader"] = {"grade_id": "a", "solution": True, "grade": False}
    nb.cells = [cell]
    nbformat.write(nb, path)


def test_the_solutions_compiled_kernels_are_kept_beside_its_limits(tmp_path: Path) -> None:
    _solution(tmp_path / "course")
    limits = cell_budgets.budgets_file(tmp_path / "course", "demo", tmp_path / "work", timeout=60)
    assert limits is not None
    cache = cell_budgets.load_kernel_cache(str(limits))
    assert cache is not None and (cache / "kernel.cubin").read_text() == "compiled"
    assert cell_budgets.load_kernel_cache("") is None  # plain nbgrader: no solution run


def test_each_box_gets_its_own_copy_without_links(tmp_path: Path) -> None:
    cache = tmp_path / "kernels"
    cache.mkdir()
    (cache / "kernel.cubin").write_text("compiled")
    (tmp_path / "secret").write_text("not for students")
    (cache / "link.cubin").symlink_to(tmp_path / "secret")
    notebook_dir = tmp_path / "autograded" / "s1" / "demo"
    notebook_dir.mkdir(parents=True)
    policy = sandbox.Policy(level="limits")
    opened = boxes.open_box(policy, notebook_dir, tmp_path / "box", [], kernel_cache=cache)
    try:
        copied = opened.runtime / "home" / ".cupy" / "kernel_cache"
        assert (copied / "kernel.cubin").read_text() == "compiled"
        assert not os.path.lexists(copied / "link.cubin")
        (copied / "kernel.cubin").write_text("changed by a student")
        assert (cache / "kernel.cubin").read_text() == "compiled"  # the seed is not theirs
    finally:
        opened.close()
