"""What the released numba_distance notebook's visible tests say to a student (issue 26).

A student reads only the visible tests' failures when pressing Validate, so each
must name its real cause: a kernel in which a thread writes more than its own
entry (a grid-stride loop) hears the task's rule, one thread per entry and why
(the tests launch grids that cover part of ``out``), not a remark on which index
gives the row; a ``grid_for`` with a wrong answer hears what was expected and what
came back, never a bare ``AssertionError``, and one returning lists instead of
tuples passes, as in the hidden tests. The cells run in-process, in order, as in
a student's kernel (the kernels in Numba's CUDA simulator), with the answers
substituted by grade id.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from helpers import ROOT, solution_answers

RELEASED = ROOT / "exercises" / "numba_distance" / "numba_distance.ipynb"

GRID_STRIDE_KERNEL = """@cuda.jit
def l1_kernel(a, b, out):
    x, y, z = cuda.grid(3)
    gx, gy, gz = cuda.gridsize(3)
    for pair in range(z, out.shape[0], gz):
        for row in range(y, out.shape[1], gy):
            for col in range(x, out.shape[2], gx):
                total = 0.0
                for k in range(a.shape[2]):
                    total += abs(a[pair, row, k] - b[pair, col, k])
                out[pair, row, col] = total
"""
ROW_LOOP_KERNEL = """@cuda.jit
def l1_kernel(a, b, out):
    first, row, pair = cuda.grid(3)
    if first == 0 and pair < out.shape[0] and row < out.shape[1]:
        for col in range(out.shape[2]):
            total = 0.0
            for k in range(a.shape[2]):
                total += abs(a[pair, row, k] - b[pair, col, k])
            out[pair, row, col] = total
"""


def _launch_answer(grid: str) -> str:
    """The model ``batched_l1`` with a ``grid_for`` that returns *grid* (an expression)."""
    batched = solution_answers("numba_distance")["numba-launch"].split("def batched_l1")[1]
    return (
        "def grid_for(shape, block=(32, 4)):\n"
        "    pairs, rows, cols = shape\n"
        "    bx, by = block\n"
        f"    return {grid}\n\n\n"
        f"def batched_l1{batched}"
    )


def run_visible_tests(
    answers: dict[str, str], notebook: Path = RELEASED
) -> dict[str, BaseException | None]:
    """Run *notebook*'s code cells in order with *answers* in its solution cells.

    Returns each test cell's failure (``None`` where it passed); a failing test
    cell does not stop the later ones, as in nbgrader.
    """
    answers = {**solution_answers("numba_distance"), **answers}
    namespace: dict = {"__name__": "__main__"}
    outcomes: dict[str, BaseException | None] = {}
    for cell in nbformat.read(notebook, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        source = answers[meta["grade_id"]] if meta.get("solution") else cell.source
        if not meta.get("grade"):
            exec(compile(source, meta.get("grade_id", "cell"), "exec"), namespace)  # noqa: S102
            continue
        try:
            exec(compile(source, meta["grade_id"], "exec"), namespace)  # noqa: S102 - course tests
            outcomes[meta["grade_id"]] = None
        except AssertionError as failure:
            outcomes[meta["grade_id"]] = failure
    return outcomes


@pytest.mark.parametrize(
    "kernel", [GRID_STRIDE_KERNEL, ROW_LOOP_KERNEL], ids=["grid-stride", "one-thread-per-row"]
)
def test_kernel_writing_more_than_its_entry_hears_one_thread_per_entry_and_why(
    kernel: str,
) -> None:
    failure = run_visible_tests({"numba-kernel": kernel})["numba-test-kernel"]
    assert failure is not None, "a thread writing many entries passed the visible kernel test"
    message = str(failure)
    assert "a thread must compute its own entry only" in message, message
    assert "no loop over pairs, rows or columns" in message, message
    assert "cover only part of out" in message, message
    assert "must come from" not in message, f"names the index mapping as the cause: {message}"


@pytest.mark.parametrize(
    "grid",
    [
        "[math.ceil(cols / bx), math.ceil(rows / by), pairs], [bx, by, 1]",
        "(math.ceil(cols / bx), math.ceil(rows / by), pairs), [bx, by, 1]",
    ],
    ids=["lists", "grid-list-threads-tuple"],
)
def test_grid_for_may_return_lists(grid: str) -> None:
    outcomes = run_visible_tests({"numba-launch": _launch_answer(grid)})
    assert outcomes["numba-test-launch"] is None, (
        f"lists are refused: {outcomes['numba-test-launch']!r}"
    )


@pytest.mark.parametrize(
    ("grid", "got"),
    [
        (
            "(math.ceil(rows / by), math.ceil(cols / bx), pairs), (bx, by, 1)",
            "((2, 3, 2), (32, 4, 1))",
        ),
        ("[cols // bx, rows // by, pairs], [bx, by, 1]", "([2, 1, 2], [32, 4, 1])"),  # rounded down
        ("(math.ceil(cols / bx), math.ceil(rows / by), pairs)", "(3, 2, 2)"),  # the grid alone
    ],
    ids=["swapped", "rounded-down-lists", "grid-only"],
)
def test_wrong_grid_for_names_expected_and_got(grid: str, got: str) -> None:
    failure = run_visible_tests({"numba-launch": _launch_answer(grid)})["numba-test-launch"]
    assert failure is not None, "a wrong grid_for passed the visible launch test"
    message = str(failure)
    assert message.strip(), "a bare AssertionError"
    assert "expected (grid, threads) = ((3, 2, 2), (32, 4, 1))" in message, message
    assert f"grid_for((2, 5, 70), (32, 4)) returned {got}," in message, message


def test_model_solution_passes_every_visible_test() -> None:
    outcomes = run_visible_tests({})
    assert outcomes.keys() == {"numba-test-kernel", "numba-test-launch"}
    assert all(failure is None for failure in outcomes.values()), outcomes
