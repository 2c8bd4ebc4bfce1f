"""The nbgrader preprocessor that keeps hidden tests out of the feedback students receive."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def feedback_preprocessor() -> type:
    """Built on first use: importing nbgrader in every assignment notebook would be slow."""
    from nbgrader.preprocessors import ClearHiddenTests

    class FeedbackWithoutHiddenTests(ClearHiddenTests):
        """Remove hidden tests from the feedback, including from error tracebacks.

        nbgrader's feedback is the autograded notebook, which contains the hidden
        tests; its own ``ClearHiddenTests`` removes their source, but a failing
        hidden assertion's traceback would still quote it. For cells that had
        hidden tests we keep only the error's name and message (hidden tests
        write messages that give no hidden input away, see ``checks.hidden_test``).
        """

        def preprocess_cell(self, cell, resources, cell_index):  # type: ignore[override]
            if cell.cell_type == "code" and self._remove_hidden_test_region(cell):
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        output["traceback"] = [
                            f"{output.get('ename', 'Error')}: {output.get('evalue', '')}",
                            "(the traceback is not shown because this cell has hidden tests)",
                        ]
            return cell, resources

    FeedbackWithoutHiddenTests.__module__ = "demos.grading"
    return FeedbackWithoutHiddenTests
