"""nbgrader's ``OverwriteCells``, which warns about tampering only when there was some.

Before grading, nbgrader puts every locked cell back as the instructor wrote
it, and says "Attribute 'checksum' for cell ... has changed!" whenever the
submitted cell differs. A test cell with hidden tests always differs: the
release holds it without them. So every untouched test cell of every
submission warned, in ``nbgrader autograde``'s log and in the formgrader, and
an instructor reads that as tampering. :class:`RestoreCells` puts cells back
exactly as nbgrader does and keeps the warning for the cells that were
really changed, that is, whose source is not the instructor's with its hidden
tests taken out.
"""

from __future__ import annotations

from typing import Any

from nbformat import NotebookNode
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import OverwriteCells

from grader.verdicts.hidden_tests import split_hidden


def _lines(source: str) -> list[str]:
    """The source's non-blank lines, without trailing spaces (how the release may differ)."""
    return [line.rstrip() for line in source.splitlines() if line.strip()]


def released_as_is(submitted: str, instructors: str) -> bool:
    """Whether *submitted* is the *instructors* cell with its hidden tests taken out."""
    visible, hidden = split_hidden(instructors)
    return hidden is not None and _lines(submitted) == _lines(visible)


class RestoreCells(OverwriteCells):
    """``OverwriteCells`` without the warning for hidden tests it puts back into untouched cells."""

    _untouched: str | None = None

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict, cell_index: int
    ) -> tuple[NotebookNode, dict]:
        self._untouched = None
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            try:
                source = self.gradebook.find_source_cell(
                    grade_id, self.notebook_id, self.assignment_id
                )
            except MissingEntry:
                source = None
            if source is not None and released_as_is(cell.source, source.source):
                self._untouched = grade_id
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name: str, attr: str, old: Any, new: Any) -> None:
        if attr == "checksum" and name == self._untouched:
            self.log.debug("Hidden tests of cell %s put back", name)
            return
        super().report_change(name, attr, old, new)
