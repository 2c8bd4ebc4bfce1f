"""The execute preprocessor ``nbgrader_config.py`` names, put together from one class per concern.

nbgrader runs a notebook with one ``Execute`` preprocessor, and the grader has
several things to change about that one run, each in a module of its own
(outermost first, as :class:`GuardedExecute` lists them):

* :mod:`~grader.integration.hidden_test_cells`: the kernel runs only each test
  cell's visible tests; the hidden ones are decided in the grader's process,
  asking the kernel for plain data (:mod:`~grader.integration.kernel_requests`);
* :mod:`~grader.integration.phase_timings`: the notebook's seconds by phase,
  for ``python -m grader bench``;
* :mod:`~grader.integration.cell_limits`: each cell's time limit from the
  solution's run, and a timeout message that says so;
* :mod:`~grader.integration.sandboxed_kernel`: the kernel in the grading
  sandbox, for plain ``nbgrader autograde`` and ``python -m grader`` alike.

The preprocessors listed after it in ``c.Autograde.autograde_preprocessors``
do one job each as well: :class:`grader.integration.stderr.StderrNotCounted`
(warnings never cost points) and
:class:`grader.integration.grades.SaveAutoGradesWithFlags` (a cell the grader
could not judge goes to a human). Their settings stay under
``c.GuardedExecute.<name>``, whichever concern declares them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from nbclient.util import run_sync

from grader.integration.cell_limits import CellLimits
from grader.integration.cells import is_autograder_test, is_given
from grader.integration.hidden_test_cells import INTEGRITY_ERROR, HiddenTestCells
from grader.integration.phase_timings import PhaseTimings

# Named here by modules that predate the split (grader.verdicts' tests, tests/exercises).
__all__ = ["INTEGRITY_ERROR", "GuardedExecute", "is_autograder_test", "is_given"]


def _late_bound(name: str) -> Callable[..., Awaitable[Any]]:
    """A coroutine function that awaits the instance's own *name*, however it was composed."""

    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await getattr(self, name)(*args, **kwargs)

    return call


class GuardedExecute(HiddenTestCells, PhaseTimings, CellLimits):
    """nbgrader's ``Execute`` in the sandbox, with hidden tests, cell limits and timings."""

    # nbclient binds its synchronous wrappers to its own coroutines: bind them to ours.
    execute_cell = run_sync(_late_bound("async_execute_cell"))
    start_new_kernel_client = run_sync(_late_bound("async_start_new_kernel_client"))
