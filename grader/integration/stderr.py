"""Output on stderr is not an error: the preprocessor that relabels it after execution.

nbgrader scores a graded cell 0 when its outputs hold anything on stderr, so a
correct answer that triggers a warning (Numba's ``NumbaPerformanceWarning``, a
deprecation) would lose its points. :class:`StderrNotCounted` runs right after
the execution in ``c.Autograde.autograde_preprocessors`` and turns each stderr
stream into a labelled stdout stream; real errors (error outputs) stay errors.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

STDERR_LABEL = "[stderr, not counted as an error] "


def stderr_to_stdout(cell: NotebookNode) -> None:
    """Turn the cell's stderr streams into labelled stdout streams (errors stay errors)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            output["name"] = "stdout"
            lines = output.get("text", "").splitlines(keepends=True)
            output["text"] = "".join(STDERR_LABEL + line for line in lines)


class StderrNotCounted(NbGraderPreprocessor):
    """Every code cell's stderr as labelled stdout, so that warnings never cost points."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict, index: int
    ) -> tuple[NotebookNode, dict]:
        if cell.cell_type == "code":
            stderr_to_stdout(cell)
        return cell, resources
