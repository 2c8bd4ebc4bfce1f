"""What CuPy and JAX compiled for the solution seeds each notebook's box (grader.sandbox.box)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

from grader.integration import cell_budgets
from grader.sandbox import box as boxes
from grader.sandbox import environment as sandbox_environment

# What CuPy and JAX do with what they compiled: a file in the folder each is told.
from grader.sandbox import isolation as sandbox

_COMPILES = (
    "import os, pathlib\n"
    "for name in ('CUPY_CACHE_DIR', 'JAX_COMPILATION_CACHE_DIR'):\n"
    "    pathlib.Path(os.environ[name]).mkdir(parents=True, exist_ok=True)\n"
    "    pathlib.Path(os.environ[name], 'kernel').write_text(os.environ['OMP_NUM_THREADS'])"
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
    as_notebooks = sandbox_environment.kernel_environment(sandbox.Policy(level="limits", threads=1))
    limits = cell_budgets.budgets_file(
        tmp_path / "course", "demo", tmp_path / "work", timeout=60, environment=as_notebooks
    )
    assert limits is not None
    cache = cell_budgets.load_kernel_cache(str(limits))
    assert cache is not None
    # compiled as the notebooks will run: one thread each here
    assert (cache / "cupy" / "kernel").read_text() == "1"
    assert (cache / "jax" / "kernel").read_text() == "1"
    assert cell_budgets.load_kernel_cache("") is None  # plain nbgrader: no solution run


def test_each_box_gets_its_own_copy_without_links(tmp_path: Path) -> None:
    cache = tmp_path / "kernels"
    (cache / "cupy").mkdir(parents=True)
    (cache / "cupy" / "kernel.cubin").write_text("compiled")
    (tmp_path / "secret").write_text("not for students")
    (cache / "cupy" / "link.cubin").symlink_to(tmp_path / "secret")
    notebook_dir = tmp_path / "autograded" / "s1" / "demo"
    notebook_dir.mkdir(parents=True)
    policy = sandbox.Policy(level="limits")
    opened = boxes.open_box(policy, notebook_dir, tmp_path / "box", [], kernel_cache=cache)
    try:
        home = opened.runtime / "home"
        copied = home / sandbox_environment.COMPILED_KERNELS / "cupy"
        assert (copied / "kernel.cubin").read_text() == "compiled"
        assert not os.path.lexists(copied / "link.cubin")
        (copied / "kernel.cubin").write_text("changed by a student")
        assert (
            cache / "cupy" / "kernel.cubin"
        ).read_text() == "compiled"  # the seed is theirs alone
        # and the kernel is told where they are
        told = sandbox_environment.kernel_environment(opened.policy)
        assert told["CUPY_CACHE_DIR"] == str(copied)
        assert told["JAX_COMPILATION_CACHE_DIR"] == str(
            home / sandbox_environment.COMPILED_KERNELS / "jax"
        )
    finally:
        opened.close()
