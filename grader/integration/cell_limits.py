"""Each cell's time limit from the solution's own run, and a timeout message that says so.

nbgrader gives every cell one ``Execute.timeout``; a class of slow notebooks
then waits that long per endless loop, and a fast cell gets as long as the
slowest. ``python -m grader autograde`` times the solution first
(:mod:`grader.integration.cell_budgets`) and hands the file to
:attr:`CellLimits.cell_budgets`: each test cell may take what its solution
took, with margin, and the box starts with the GPU kernels CuPy compiled for
the solution, so that no notebook pays for compiling them again.
"""

from __future__ import annotations

from typing import Any

from nbformat import NotebookNode
from traitlets import Unicode

from grader.integration import cell_budgets
from grader.integration.sandboxed_kernel import SandboxedExecute


class CellLimits(SandboxedExecute):
    """Per-cell time limits and the solution's kernel cache, from :attr:`cell_budgets`."""

    cell_budgets = Unicode(
        "",
        help="Per-cell time limits measured on the solution, and the GPU kernels CuPy compiled "
        "for it (grader.integration.cell_budgets), written by python -m grader; empty: every "
        "cell gets Execute.timeout and each notebook compiles its own kernels.",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        limits = cell_budgets.load_limits(self.cell_budgets)
        if limits:
            # a cell of the student's own (no grade id): as long as the solution's typical cell
            own = sorted(limits.values())[len(limits) // 2]
            self.timeout_func = lambda cell: limits.get(
                cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"), own
            )
        return super().preprocess(nb, resources)

    def kernel_cache(self) -> Any:
        return cell_budgets.load_kernel_cache(self.cell_budgets)

    async def _async_handle_timeout(
        self, timeout: int, cell: NotebookNode | None = None
    ) -> dict[str, Any] | None:
        """nbgrader's timeout error, with a message that says what happened (its own is empty)."""
        reply = await super()._async_handle_timeout(timeout, cell)
        if reply is not None:
            text = f"the cell did not finish in {timeout:g} s (its time limit)"
            reply["content"].update(evalue=text, traceback=[f"CellTimeoutError: {text}"])
        return reply
