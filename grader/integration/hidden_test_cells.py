"""The hidden tests of a test cell, decided in the grader's process, never in the kernel.

nbgrader scores a test cell by whether its outputs hold an error, and those
outputs come from the student's kernel: any code the student ran there
(hooks, patched functions, trace functions, input transformers) could decide
them. So :class:`HiddenTestCells` splits each test cell
(:func:`grader.verdicts.hidden_tests.split_hidden`): the kernel runs only the
visible tests (the ones students have), whose failures still cost the cell its
points, as when the student validated; the hidden tests run here
(:func:`grader.verdicts.hidden_tests.judge`), ask the kernel for plain data
(:mod:`grader.integration.kernel_requests`) and run the student's kernels in a
CUDA simulator started in the notebook's sandbox
(:mod:`grader.verdicts.kernel_runner`). A failed hidden test adds an error
output with the course's own sentence; one the grader could not apply (say, a
"kernel" that is not one) an error named :data:`INTEGRITY_ERROR`, which
:class:`grader.integration.grades.SaveAutoGradesWithFlags` marks for manual
grading. So the hidden tests' source and the course secret never enter the
kernel, and the verdict is decided where student code cannot reach.
"""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Any

from nbformat import NotebookNode

from grader.integration.cells import is_autograder_test, is_given
from grader.integration.kernel_requests import KernelRequests
from grader.sandbox import box as boxes
from grader.sandbox.flags import record_flag
from grader.verdicts.context import Submission
from grader.verdicts.hidden_tests import Verdict, judge, split_hidden
from grader.verdicts.kernel_runner import KernelRunner

INTEGRITY_ERROR = "GradingIntegrityError"
HIDDEN_TEST_FAILURE = "GradingFailure"


class GradingMachineryError(RuntimeError):
    """A hidden test could not be decided because the grading machinery failed.

    Raised out of the notebook's execution, so nbgrader fails the notebook and
    :mod:`grader.run.one_student` reports it ``failed`` with this reason (and in
    the command that grades it again): a grader's failure never becomes a score.
    """


def verdict_output(verdict: Verdict) -> NotebookNode:
    """The error output a failed hidden test adds to its cell (flagged ones need a human)."""
    name = INTEGRITY_ERROR if verdict.flag else HIDDEN_TEST_FAILURE
    text = verdict.message + ("; flagged for manual grading" if verdict.flag else "")
    return NotebookNode(output_type="error", ename=name, evalue=text, traceback=[f"{name}: {text}"])


class HiddenTestCells(KernelRequests):
    """The kernel runs each test cell's visible part; its hidden part is judged here after."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        self._hidden_seconds = 0.0
        with contextlib.ExitStack() as stack:
            # The student's kernels, if any, run in the notebook's sandbox (placed with its box).
            self._runner = stack.enter_context(KernelRunner())
            self._runs_kernels = any(
                "cuda.jit" in cell.source for cell in nb.cells if cell.cell_type == "code"
            )
            self._hidden: dict[int, str] = {}
            originals: dict[int, str] = {}
            for index, cell in enumerate(nb.cells):
                if is_autograder_test(cell):
                    visible, hidden = split_hidden(cell.source)
                    if hidden is not None:
                        self._hidden[index], originals[index] = hidden, cell.source
                        cell.source = visible
            try:
                return super().preprocess(nb, resources)
            finally:
                for index, source in originals.items():
                    nb.cells[index].source = source

    def box_opened(self, box: boxes.Box) -> None:
        super().box_opened(box)
        self._runner.place(box.runner_command())
        if self._runs_kernels:
            self._runner.start()  # its imports overlap with the notebook's kernel starting

    def timing_phases(self) -> dict[str, float]:
        return {"hidden_tests": self._hidden_seconds, **super().timing_phases()}

    def _submission(self, cell_index: int) -> Submission:
        before = [c for c in self.nb.cells[:cell_index] if c.cell_type == "code"]
        return Submission(
            ask_kernel=self.ask_from_thread,
            student_sources=[
                c.source for c in before if not is_given(c) and not is_autograder_test(c)
            ],
            given_sources=[c.source for c in before if is_given(c)],
            runner=self._runner,
        )

    async def async_execute_cell(
        self, cell: NotebookNode, cell_index: int, *args: Any, **kwargs: Any
    ) -> NotebookNode:
        cell = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        hidden = getattr(self, "_hidden", {}).get(cell_index)
        if hidden is None:
            return cell
        decided = time.monotonic()
        self.start_requests(cell)
        grade_id = cell.metadata["nbgrader"].get("grade_id", str(cell_index))
        decide = functools.partial(judge, hidden, grade_id, self._submission(cell_index))
        verdict = await self._loop.run_in_executor(None, decide)
        self._hidden_seconds += time.monotonic() - decided
        if verdict.machinery:
            # not a score: the notebook fails, with this reason (grader.run.one_student)
            raise GradingMachineryError(
                f"hidden tests of {grade_id} not decided: {verdict.machinery}"
            )
        if not verdict.passed:
            cell.outputs.append(verdict_output(verdict))
        if verdict.flag:
            self.log.warning("Flagged in cell %s: %s", grade_id, verdict.flag)
            record_flag(grade_id, verdict.flag)
        return cell
