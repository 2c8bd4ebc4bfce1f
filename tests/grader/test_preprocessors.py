"""grader.integration.preprocessors: what the grader's preprocessors do to a cell's outputs."""

from __future__ import annotations

import nbformat

from grader.integration.preprocessors import STDERR_LABEL, stderr_to_stdout


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
