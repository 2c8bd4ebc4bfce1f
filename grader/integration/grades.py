"""Saving the autograder's scores, with a cell the grader could not judge left to a human.

A hidden test that could not be applied (an error output named
:data:`~grader.integration.hidden_test_cells.INTEGRITY_ERROR`) says nothing
about the student's answer, so its cell's automatic score must not stand
alone: :class:`SaveAutoGradesWithFlags` replaces nbgrader's ``SaveAutoGrades``
in ``c.Autograde.autograde_preprocessors`` and marks such a cell for manual
grading, which ``nbgrader formgrader`` then shows.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader.preprocessors import SaveAutoGrades

from grader.integration.hidden_test_cells import INTEGRITY_ERROR


class SaveAutoGradesWithFlags(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``; a cell that failed the integrity check needs a human."""

    def _add_score(self, cell: NotebookNode, resources: dict) -> None:
        super()._add_score(cell, resources)
        if any(o.get("ename") == INTEGRITY_ERROR for o in cell.get("outputs", [])):
            grade = self.gradebook.find_grade(
                cell.metadata["nbgrader"]["grade_id"],
                self.notebook_id,
                self.assignment_id,
                self.student_id,
            )
            grade.needs_manual_grade = True
            self.gradebook.db.commit()
