"""The nbgrader preprocessor that keeps hidden tests out of the feedback students receive."""

from __future__ import annotations

from nbgrader.preprocessors import ClearHiddenTests
from traitlets import List


class FeedbackWithoutHiddenTests(ClearHiddenTests):
    """Remove hidden tests from the feedback, including from error tracebacks.

    nbgrader's feedback is the autograded notebook, which holds the hidden
    tests' source; its own ``ClearHiddenTests`` removes that source. The
    hidden tests themselves ran in the grader's process (``grader.verdicts``)
    and left only an error with a sentence of the course's; for cells with
    hidden tests every error is still cut to its name and message, so no
    traceback can quote a line of them.

    ``display_data_priority`` is declared configurable as in nbgrader's own
    ``GetGrades``: nbconvert's HTML exporter passes that option to every
    preprocessor, and without it each feedback run warned "Config option
    display_data_priority not recognized".
    """

    display_data_priority = List(
        ["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png", "image/jpeg"]
        + ["text/plain"]
    ).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):  # type: ignore[no-untyped-def]
        if cell.cell_type == "code" and self._remove_hidden_test_region(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [
                        f"{output.get('ename', 'Error')}: {output.get('evalue', '')}",
                        "(the traceback is not shown because this cell has hidden tests)",
                    ]
        return cell, resources
