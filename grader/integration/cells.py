"""What kind of cell nbgrader's metadata makes a notebook cell: scored test, given code.

The hidden tests (:mod:`grader.integration.hidden_test_cells`) and the source
gate of :mod:`grader.verdicts` tell the student's own code from the cells the
assignment gives and the tests it scores by these, so they are defined once,
here, below both.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader import utils


def is_autograder_test(cell: NotebookNode) -> bool:
    """A code cell nbgrader scores from its outputs (a test cell, not a solution)."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def is_given(cell: NotebookNode) -> bool:
    """A code cell the assignment gives (set-up, helpers): nbgrader restores it from the release."""
    return (
        cell.cell_type == "code"
        and utils.is_locked(cell)
        and not utils.is_solution(cell)
        and not utils.is_grade(cell)
    )
