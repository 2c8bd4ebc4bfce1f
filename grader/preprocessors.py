"""nbgrader preprocessors that make an autograder score mean what it says.

nbgrader gives 0 points to a graded cell with *any* stderr output, so a
Numba performance warning or a debug print to ``sys.stderr`` costs correct code
its points. And it trusts that a test cell which printed no error ran its
tests, so a student who makes IPython drop the test cell's lines (an input
transformer) gets full marks. :class:`GuardedExecute` replaces nbgrader's
``Execute`` and fixes both:

* before a run it appends to every autograder test cell a line that prints a
  token derived from a random nonce made for this run (the student never sees
  it: it is not in any file they have and is removed from the outputs);
* after each test cell it asks the kernel, through ``user_expressions`` (which
  IPython evaluates without input or AST transformers), whether the IPython
  transformers, the cell-running methods or ``numpy.testing`` were changed
  since the kernel started;
* a test cell without its token, or run in a tampered kernel, gets an error
  output (0 points) named :data:`INTEGRITY_ERROR`; :class:`SaveAutoGradesWithFlags`
  then marks it for manual grading;
* stderr streams become stdout streams under a label, so warnings never cost
  points, while real errors stay errors;
* the kernel always runs in the grading sandbox (:mod:`grader.box`): with the
  limits and user id ``python -m grader autograde`` wrote into
  :attr:`GuardedExecute.sandbox_policy`, or, for plain ``nbgrader autograde``
  (the command line or the formgrader's button), with this machine's strongest
  level and the default limits. So no way of grading runs a student's code
  with the instructor's rights.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from nbclient.util import run_sync
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Unicode

from grader import box as boxes
from grader.flags import record_flag
from grader.sandbox import Policy

INTEGRITY_ERROR = "GradingIntegrityError"
STDERR_LABEL = "[stderr, not counted as an error] "

# Evaluated by IPython outside every transformer: the state a student would have
# to change to skip or rewrite a test cell.
_PROBE = (
    "(lambda sh, sys: repr(["
    "[id(f) for f in sh.input_transformers_cleanup + sh.input_transformers_post"
    " + sh.ast_transformers],"
    "[id(getattr(type(sh), n)) for n in ('run_cell', 'run_cell_async', 'transform_cell',"
    " 'run_ast_nodes', 'run_code', 'ev')],"
    "sorted(n for n in ('run_cell', 'run_cell_async', 'transform_cell', 'run_ast_nodes',"
    " 'run_code', 'ev') if n in vars(sh)),"
    "sorted(n for n, f in vars(getattr(sys.modules.get('numpy'), 'testing', sys)).items()"
    " if n.startswith('assert') and not getattr(f, '__module__', 'numpy').startswith('numpy'))"
    "]))(__import__('IPython').get_ipython(), __import__('sys'))"
)


def is_autograder_test(cell: NotebookNode) -> bool:
    """A code cell nbgrader scores from its outputs (a test cell, not a solution)."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def with_token(source: str, token: str) -> str:
    """*source* with a last line that prints *token*, keeping the cell's displayed value.

    nbgrader reads partial credit from a test cell's value (its last
    expression), so when the cell ends in an expression, that value is kept and
    shown again after the token is printed.
    """
    printing = f"print({token!r})"
    lines = source.rstrip("\n").splitlines()
    try:
        last = ast.parse(source).body[-1]
    except (SyntaxError, IndexError):  # IPython magics, or an empty cell
        return "\n".join([*lines, printing])
    ends_alone = (
        last.end_lineno == len(lines)
        and lines[-1].rstrip() != ""
        and not lines[-1].rstrip().endswith(";")
    )
    if isinstance(last, ast.Expr) and last.col_offset == 0 and ends_alone:
        expression = "\n".join(lines[last.lineno - 1 :])
        return "\n".join(
            [
                *lines[: last.lineno - 1],
                f"_grader_value = (\n{expression}\n)",
                printing,
                "_grader_value",
            ]
        )
    return "\n".join([*lines, printing])


def stderr_to_stdout(cell: NotebookNode) -> None:
    """Turn the cell's stderr streams into labelled stdout streams (errors stay errors)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            output["name"] = "stdout"
            lines = output.get("text", "").splitlines(keepends=True)
            output["text"] = "".join(STDERR_LABEL + line for line in lines)


def _scrub(cell: NotebookNode, token: str) -> None:
    """Remove *token* from every output of the cell (it must never reach feedback)."""
    for output in cell.get("outputs", []):
        if "text" in output:
            output["text"] = output["text"].replace(token + "\n", "").replace(token, "")
        for key in ("evalue",):
            if key in output:
                output[key] = output[key].replace(token, "")
        if "traceback" in output:
            output["traceback"] = [line.replace(token, "") for line in output["traceback"]]
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str):
                output["data"][mime] = value.replace(token, "")
    cell["outputs"] = [
        o
        for o in cell.get("outputs", [])
        if not (o.get("output_type") == "stream" and not o.get("text"))
    ]


class GuardedExecute(Execute):
    """nbgrader's ``Execute`` in the sandbox, with the run-time integrity check and stderr fix."""

    sandbox_policy = Unicode(
        "",
        help="Limits and user id for the sandboxed kernel (JSON of grader.sandbox.Policy), "
        "written by python -m grader; empty: this machine's strongest sandbox, default limits.",
    ).tag(config=True)
    box_folder = Unicode(
        "", help="Where the notebook's sandbox is made; empty: a temporary folder."
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
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

    def create_kernel_manager(self) -> Any:
        """The kernel manager of a ``grader-sandbox`` kernel in a fresh box for this notebook."""
        notebook_dir = Path(self.resources.get("metadata", {}).get("path") or ".").resolve()
        if self.sandbox_policy:
            limits, folder = Policy.load(self.sandbox_policy), Path(self.box_folder)
        else:
            limits, folder = boxes.plain_setting(self._stack)
        # nbgrader runs in <course>/autograded/<student>/<assignment>: the course stays out.
        private = [Path.cwd(), *notebook_dir.parents[:3]]
        self._box = boxes.open_box(limits, notebook_dir, folder, private)
        for left_out in self._box.left_out:
            record_flag("files", left_out)
        self.kernel_name = boxes.KERNEL_NAME
        km = super().create_kernel_manager()
        km.kernel_spec_manager = KernelSpecManager(kernel_dirs=self._box.kernel_dirs)
        # Unix sockets in the runtime folder: the kernel has no network.
        km.transport = "ipc"
        km.ip = str(self._box.runtime / "kernel")
        km.connection_file = str(self._box.runtime / "kernel.json")
        return km

    def _preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        nonce = secrets.token_bytes(32)
        self._tokens: dict[int, str] = {}
        self._tampered: set[int] = set()
        self._baseline: str | None = None
        originals: dict[int, str] = {}
        for index, cell in enumerate(nb.cells):
            if is_autograder_test(cell):
                grade_id = cell.metadata["nbgrader"].get("grade_id", str(index))
                digest = hmac.new(nonce, f"{index}:{grade_id}".encode(), hashlib.sha256)
                token = "grader-" + digest.hexdigest()[:40]
                self._tokens[index] = token
                originals[index] = cell.source
                cell.source = with_token(cell.source, token)
        try:
            nb, resources = super().preprocess(nb, resources)
        finally:
            for index, source in originals.items():
                nb.cells[index].source = source
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            stderr_to_stdout(cell)
            if index in self._tokens:
                self._verify(cell, index)
        return nb, resources

    def _verify(self, cell: NotebookNode, index: int) -> None:
        token = self._tokens[index]
        printed = "".join(
            o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
        )
        failed_already = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
        reason = None
        if index in self._tampered:
            reason = "the kernel's cell-running machinery was changed before this test ran"
        elif token not in printed and not failed_already:
            reason = "the test cell did not run to its end"
        _scrub(cell, token)
        if reason:
            grade_id = cell.metadata["nbgrader"].get("grade_id", "")
            self.log.warning("Integrity check failed in cell %s: %s", grade_id, reason)
            record_flag(grade_id, reason)
            cell.outputs.append(
                NotebookNode(
                    output_type="error",
                    ename=INTEGRITY_ERROR,
                    evalue=f"{reason}; flagged for manual grading",
                    traceback=[f"{INTEGRITY_ERROR}: {reason}; flagged for manual grading"],
                )
            )

    async def _probe(self) -> str:
        msg_id = self.kc.execute(
            "", silent=True, store_history=False, user_expressions={"state": _PROBE}
        )
        reply = await self.async_wait_for_reply(msg_id)
        result = (reply or {}).get("content", {}).get("user_expressions", {}).get("state", {})
        return str(result.get("data", {}).get("text/plain", result.get("status", "no reply")))

    async def async_execute_cell(
        self, cell: NotebookNode, cell_index: int, *args: Any, **kwargs: Any
    ) -> NotebookNode:
        if self._baseline is None:
            self._baseline = await self._probe()
        cell = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        if cell_index in self._tokens and await self._probe() != self._baseline:
            self._tampered.add(cell_index)
        return cell

    # nbclient binds the synchronous wrapper to its own coroutine: bind it to ours.
    execute_cell = run_sync(async_execute_cell)


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
