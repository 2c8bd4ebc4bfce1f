"""Asking the student's kernel to run the student's code, and getting plain data back.

A hidden test never runs in the kernel; it calls the student's functions
through requests that :mod:`demos.grading.serve` answers there, as an IPython
user expression evaluated outside every input transformer, and reads the
answer only as data (:mod:`demos.grading.wire`). Each call may take as long as
the test's cell may (:mod:`grader.integration.cell_budgets`), not nbclient's
60 s per call, and once one call ran out the cell's other calls get the same
answer at once: a function that never returns costs the notebook one cell's
limit.
"""

from __future__ import annotations

import ast
import asyncio

from nbclient.util import ensure_async
from nbformat import NotebookNode

from demos.grading import wire
from grader.integration.sandboxed_kernel import SandboxedExecute
from grader.verdicts.api import MachineryFailure

#: The answer to a call into the student's code that ran past its cell's limit.
_TIMED_OUT = "TimeoutError: your code did not finish in time"

# Evaluated by IPython in the student's namespace, outside every input transformer;
# what it returns is only ever read as data (demos.grading.wire).
_SERVE = "__import__('demos.grading.serve', fromlist=['handle']).handle({request!r})"

_NOT_DATA = "RuntimeError: the kernel's answer is not data"


class KernelRequests(SandboxedExecute):
    """Requests to the student's kernel from the grader's threads, with the cell's time limit."""

    def start_requests(self, cell: NotebookNode) -> None:
        """Calls made from now on (from other threads) belong to *cell* and share its limit."""
        self._loop = asyncio.get_running_loop()
        # each call into the student's code may take as long as the cell may, once
        self._call_budget, self._timed_out = float(self._get_timeout(cell) or 0), False

    def ask_from_thread(self, request: dict) -> dict:
        """One request, from a thread other than the kernel client's (a hidden test's)."""
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
            return {"error": _NOT_DATA}
        return answer if isinstance(answer, dict) else {"error": _NOT_DATA}

    async def _reply_within(self, msg_id: str, seconds: float) -> dict | None:
        """The reply to *msg_id*, or None (the kernel interrupted) after *seconds*.

        0 seconds: nbclient's own wait per call.
        """
        if not seconds:
            return await self.async_wait_for_reply(msg_id)
        try:
            return await asyncio.wait_for(self.async_wait_for_reply(msg_id), seconds)
        except TimeoutError:
            if self.interrupt_on_timeout:
                await ensure_async(self.km.interrupt_kernel())
            return None
