"""nbgrader preprocessors that make an autograder score mean what it says.

nbgrader scores a test cell by whether its outputs hold an error, and those
outputs come from the student's kernel: any code the student ran there
(hooks, patched functions, trace functions, input transformers) could decide
them. :class:`GuardedExecute` replaces nbgrader's ``Execute`` so that it
cannot:

* each test cell is split (:func:`grader.verdicts.hidden_tests.split_hidden`):
  the kernel runs only the visible tests (the ones students have), whose
  failures still cost the cell its points, as when the student validated;
* the hidden tests run in this process (:func:`grader.verdicts.hidden_tests.judge`):
  they ask the kernel to run the student's functions on their inputs and get
  plain data back, and run the student's kernels in a CUDA simulator that the
  grader starts in the notebook's sandbox (:mod:`grader.verdicts.kernel_runner`);
  a failed hidden test adds an error output with the course's own sentence.
  So the hidden tests' source and the course secret never enter the kernel,
  and the verdict is decided where student code cannot reach;
* a hidden test the grader could not apply (say, a "kernel" that is not one)
  gets an error output named :data:`INTEGRITY_ERROR`;
  :class:`SaveAutoGradesWithFlags` then marks the cell for manual grading;
* stderr streams become stdout streams under a label, so warnings never cost
  points, while real errors stay errors;
* the kernel always runs in the grading sandbox (:mod:`grader.sandbox.box`): with the
  limits and user id ``python -m grader autograde`` wrote into
  :attr:`GuardedExecute.sandbox_policy`, or, for plain ``nbgrader autograde``
  (the command line or the formgrader's button), with this machine's strongest
  level and the default limits. So no way of grading runs a student's code
  with the instructor's rights, and both give the same points.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import json
import resource
import time
from collections import Counter
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from nbclient.util import ensure_async, run_sync
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Unicode

from demos.grading import wire
from grader.integration import cell_budgets
from grader.sandbox import box as boxes
from grader.sandbox.flags import record_flag
from grader.sandbox.policy import Policy
from grader.verdicts.api import MachineryFailure
from grader.verdicts.context import Submission
from grader.verdicts.hidden_tests import Verdict, judge, split_hidden
from grader.verdicts.kernel_runner import KernelRunner

INTEGRITY_ERROR = "GradingIntegrityError"
HIDDEN_TEST_FAILURE = "GradingFailure"
STDERR_LABEL = "[stderr, not counted as an error] "

#: The answer to a call into the student's code that ran past its cell's limit.
_TIMED_OUT = "TimeoutError: your code did not finish in time"

# Evaluated by IPython in the student's namespace, outside every input transformer;
# what it returns is only ever read as data (demos.grading.wire).
_SERVE = "__import__('demos.grading.serve', fromlist=['handle']).handle({request!r})"


class GradingMachineryError(RuntimeError):
    """A hidden test could not be decided because the grading machinery failed.

    Raised out of the notebook's execution, so nbgrader fails the notebook and
    :mod:`grader.run.one_student` reports it ``failed`` with this reason (and in
    the command that grades it again): a grader's failure never becomes a score.
    """


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


def stderr_to_stdout(cell: NotebookNode) -> None:
    """Turn the cell's stderr streams into labelled stdout streams (errors stay errors)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            output["name"] = "stdout"
            lines = output.get("text", "").splitlines(keepends=True)
            output["text"] = "".join(STDERR_LABEL + line for line in lines)


def verdict_output(verdict: Verdict) -> NotebookNode:
    """The error output a failed hidden test adds to its cell (flagged ones need a human)."""
    name = INTEGRITY_ERROR if verdict.flag else HIDDEN_TEST_FAILURE
    text = verdict.message + ("; flagged for manual grading" if verdict.flag else "")
    return NotebookNode(output_type="error", ename=name, evalue=text, traceback=[f"{name}: {text}"])


class GuardedExecute(Execute):
    """nbgrader's ``Execute`` in the sandbox, with the run-time integrity check and stderr fix."""

    sandbox_policy = Unicode(
        "",
        help="Limits and user id for the sandboxed kernel (JSON of grader.sandbox.policy.Policy), "
        "written by python -m grader; empty: this machine's strongest sandbox, default limits.",
    ).tag(config=True)
    box_folder = Unicode(
        "", help="Where the notebook's sandbox is made; empty: a temporary folder."
    ).tag(config=True)
    cell_budgets = Unicode(
        "",
        help="Per-cell time limits measured on the solution, and the GPU kernels CuPy compiled "
        "for it (grader.integration.cell_budgets), written by python -m grader; empty: every "
        "cell gets Execute.timeout and each notebook compiles its own kernels.",
    ).tag(config=True)
    timings_file = Unicode(
        "",
        help="Where to write the seconds this notebook spent starting its kernel, running cells "
        "in it and deciding hidden tests (JSON; python -m grader bench adds them up); "
        "empty: not written.",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        limits = cell_budgets.load_limits(self.cell_budgets)
        if limits:
            # a cell of the student's own (no grade id): as long as the solution's typical cell
            own = sorted(limits.values())[len(limits) // 2]
            self.timeout_func = lambda cell: limits.get(
                cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"), own
            )
        self._seconds: Counter[str] = Counter()
        self._started = time.monotonic()
        with contextlib.ExitStack() as stack:
            self._stack = stack
            self._box: boxes.Box | None = None
            try:
                return self._preprocess(nb, resources)
            finally:
                if self._box is not None:
                    for reason in self._box.close():
                        self.log.warning("Notebook stopped: %s", reason)
                        record_flag("memory", reason)
                self._write_timings()

    def _write_timings(self) -> None:
        """The notebook's seconds by phase: where a class's grading time goes."""
        if not self.timings_file:
            return
        total = time.monotonic() - self._started
        phases = {
            # the sandbox and kernel start, until the first cell could run
            "start": self._seconds["start"],
            "cells_in_kernel": self._seconds["cells"],
            "hidden_tests": self._seconds["hidden"],
        }
        phases["other"] = max(0.0, total - sum(phases.values()))
        # CPU, not wall, time: the kernel's (its cgroup's), and this process's with the simulator's
        used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        phases["grader_cpu"] = sum(u.ru_utime + u.ru_stime for u in used)
        if self._box is not None and self._box.cpu_seconds is not None:
            phases["kernel_cpu"] = self._box.cpu_seconds
        Path(self.timings_file).write_text(json.dumps({k: round(v, 3) for k, v in phases.items()}))

    def create_kernel_manager(self) -> Any:
        """The kernel manager of a ``grader-sandbox`` kernel in a fresh box for this notebook."""
        notebook_dir = Path(self.resources.get("metadata", {}).get("path") or ".").resolve()
        if self.sandbox_policy:
            limits, folder = Policy.load(self.sandbox_policy), Path(self.box_folder)
        else:
            limits, folder = boxes.plain_setting(self._stack)
        # nbgrader runs in <course>/autograded/<student>/<assignment>: the course stays out.
        private = [Path.cwd(), *notebook_dir.parents[:3]]
        self._box = boxes.open_box(
            limits, notebook_dir, folder, private, cell_budgets.load_kernel_cache(self.cell_budgets)
        )
        for left_out in self._box.left_out:
            record_flag("files", left_out)
        self._runner.place(self._box.runner_command())
        if self._runs_kernels:
            self._runner.start()  # its imports overlap with the notebook's kernel starting
        self.kernel_name = boxes.KERNEL_NAME
        km = super().create_kernel_manager()
        km.kernel_spec_manager = KernelSpecManager(kernel_dirs=self._box.kernel_dirs)
        # Unix sockets in the box's socket folder: the kernel has no network.
        km.transport = "ipc"
        km.ip = str(self._box.sockets / "kernel")
        km.connection_file = str(self._box.runtime / "kernel.json")
        return km

    def _preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        # The student's kernels, if any, run in the notebook's sandbox (placed with its box).
        self._runner = self._stack.enter_context(KernelRunner())
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
            nb, resources = super().preprocess(nb, resources)
        finally:
            for index, source in originals.items():
                nb.cells[index].source = source
        for cell in nb.cells:
            if cell.cell_type == "code":
                stderr_to_stdout(cell)
        return nb, resources

    def _submission(self, cell_index: int) -> Submission:
        before = [c for c in self.nb.cells[:cell_index] if c.cell_type == "code"]
        return Submission(
            ask_kernel=self._ask_from_thread,
            student_sources=[
                c.source for c in before if not is_given(c) and not is_autograder_test(c)
            ],
            given_sources=[c.source for c in before if is_given(c)],
            runner=self._runner,
        )

    def _ask_from_thread(self, request: dict) -> dict:
        future = asyncio.run_coroutine_threadsafe(self._ask(request), self._loop)
        return future.result()

    async def _ask(self, request: dict) -> dict:
        """One request to the student's kernel (:mod:`demos.grading.serve`); its reply as data."""
        if getattr(self, "_timed_out", False):  # this cell's time is up: no second wait
            return {"error": _TIMED_OUT}
        expression = _SERVE.format(request=wire.dumps(request))
        try:
            msg_id = self.kc.execute(
                "", silent=True, store_history=False, user_expressions={"r": expression}
            )
            reply = await self._reply_within(msg_id, getattr(self, "_call_budget", 0.0))
        except Exception as error:  # noqa: BLE001  (a dead kernel decides nothing)
            raise MachineryFailure(
                f"the kernel stopped answering a hidden test ({type(error).__name__})"
            ) from error
        if reply is None:
            self._timed_out = True
            return {"error": _TIMED_OUT}
        result = reply.get("content", {}).get("user_expressions", {}).get("r", {})
        if result.get("status") != "ok":
            return {"error": "RuntimeError: the kernel could not run your code"}
        try:
            text = ast.literal_eval(result.get("data", {}).get("text/plain", ""))
            answer = wire.loads(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, wire.WireError):
            return {"error": "RuntimeError: the kernel's answer is not data"}
        return (
            answer
            if isinstance(answer, dict)
            else {"error": "RuntimeError: the kernel's answer is not data"}
        )

    async def _reply_within(self, msg_id: str, seconds: float) -> dict | None:
        """The reply to *msg_id*, or None (the kernel interrupted) after *seconds* (0: nbclient's).

        A hidden test calls the student's code with the time its cell may take
        (:mod:`grader.integration.cell_budgets`), not nbclient's 60 s per call: a function
        that never returns costs the notebook one cell's limit.
        """
        if not seconds:
            return await self.async_wait_for_reply(msg_id)
        try:
            return await asyncio.wait_for(self.async_wait_for_reply(msg_id), seconds)
        except TimeoutError:
            if self.interrupt_on_timeout:
                await ensure_async(self.km.interrupt_kernel())
            return None

    async def async_start_new_kernel_client(self) -> Any:
        try:
            return await super().async_start_new_kernel_client()
        finally:
            self._seconds["start"] = time.monotonic() - self._started

    async def async_execute_cell(
        self, cell: NotebookNode, cell_index: int, *args: Any, **kwargs: Any
    ) -> NotebookNode:
        started = time.monotonic()
        cell = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        hidden = getattr(self, "_hidden", {}).get(cell_index)
        decided = time.monotonic()
        self._seconds["cells"] += decided - started
        if hidden is not None:
            self._loop = asyncio.get_running_loop()
            # each call into the student's code may take as long as the cell may, once
            self._call_budget, self._timed_out = float(self._get_timeout(cell) or 0), False
            grade_id = cell.metadata["nbgrader"].get("grade_id", str(cell_index))
            decide = functools.partial(judge, hidden, grade_id, self._submission(cell_index))
            verdict = await self._loop.run_in_executor(None, decide)
            self._seconds["hidden"] += time.monotonic() - decided
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

    async def _async_handle_timeout(
        self, timeout: int, cell: NotebookNode | None = None
    ) -> dict[str, Any] | None:
        """nbgrader's timeout error, with a message that says what happened (its own is empty)."""
        reply = await super()._async_handle_timeout(timeout, cell)
        if reply is not None:
            text = f"the cell did not finish in {timeout:g} s (its time limit)"
            reply["content"].update(evalue=text, traceback=[f"CellTimeoutError: {text}"])
        return reply

    # nbclient binds the synchronous wrappers to its own coroutines: bind them to ours.
    execute_cell = run_sync(async_execute_cell)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


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
