"""grader.integration.stderr: what the grader's preprocessors do to a cell's outputs."""

from __future__ import annotations

import nbformat

from grader.integration.stderr import STDERR_LABEL, stderr_to_stdout


def test_stderr_becomes_labelled_stdout_and_errors_stay() -> None:
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="Warning: slow\n"),
        nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[]),
    ]
    stderr_to_stdout(cell)
    assert cell.outputs[0]["name"] == "stdout"
    assert cell.outputs[0]["text"] == STDERR_LABEL + "Warning: slow\n"
    assert cell.outputs[1]["output_type"] == "error"


def test_stderr_is_relabelled_by_its_own_preprocessor_in_the_course_config() -> None:
    from grader.integration.stderr import StderrNotCounted
    from grader.run.settings import course_config
    from helpers import ROOT

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x"), nbformat.v4.new_markdown_cell("text")]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stderr", text="careful\n")]
    nb, _ = StderrNotCounted()(nb, {})  # enabled as nbgrader's own are
    assert nb.cells[0].outputs[0]["text"] == STDERR_LABEL + "careful\n"
    listed = course_config(ROOT).Autograde.autograde_preprocessors
    execute = listed.index("grader.integration.preprocessors.GuardedExecute")
    assert listed[execute + 1] == "grader.integration.stderr.StderrNotCounted"


def test_the_execute_preprocessor_wraps_its_concerns_outermost_first() -> None:
    """The hidden tests are judged after the cell's own seconds are counted, the timings are
    written after the box is closed (its kernel's CPU seconds), the box is the innermost."""
    from grader.integration.preprocessors import GuardedExecute

    names = [c.__name__ for c in GuardedExecute.__mro__]
    order = ["HiddenTestCells", "KernelRequests", "PhaseTimings", "CellLimits", "SandboxedExecute"]
    assert [n for n in names if n in order] == order
    assert names[names.index("SandboxedExecute") + 1] == "Execute"
