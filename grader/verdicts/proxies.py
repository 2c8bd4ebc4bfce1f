"""Stand-ins for the student's functions and kernels inside a hidden test.

* :class:`StudentFunction`: calling it asks the student's kernel to call the
  function of that name on the (copied) arguments; the value comes back as
  plain data, and what the call launched or called is added to every open
  :func:`.api.watch`. Arguments built in the kernel (devices, a counting
  module) report their state through :meth:`StudentFunction.run`.
* :class:`StudentKernel`: ``kernel[grid, block](*args)`` runs the student's
  kernel, as checked by :mod:`.kernel_source`, in the grader's simulator;
  NumPy arguments are updated in place and canaries travel both ways, as on a
  device.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from demos.grading.wire import Marker
from grader.verdicts import api
from grader.verdicts.api import StudentError
from grader.verdicts.context import current
from grader.verdicts.kernel_source import NotAKernel, kernel_definition
from grader.verdicts.originality import matches_course_code
from grader.verdicts.student_source import definitions


@dataclass
class Call:
    """Everything one call of a student's function gave back."""

    value: Any = None
    error: str | None = None
    made: list[Any] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)


class StudentFunction:
    """The student's function *name*, called in their kernel."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<your {self.name}>"

    def run(
        self,
        *args: Any,
        count_calls_of: str | None = None,
        describe: dict | None = None,
        **kwargs: Any,
    ) -> Call:
        """Call it and return the whole :class:`Call` (errors included, not raised).

        *count_calls_of* names another of the student's functions whose calls
        (the rows of their first argument) are counted; *describe* asks the
        kernel to turn the value into data (``{"as": "keras_model", "images": ...}``).
        """
        submission = current()
        reply = submission.ask_kernel(
            {
                "op": "call",
                "name": self.name,
                "args": list(args),
                "kwargs": kwargs,
                "forbidden": submission.forbidden(),
                "count_calls_of": count_calls_of,
                "describe": describe,
            }
        )
        if not isinstance(reply, dict):
            return Call(error="the kernel sent no readable answer")
        seen = reply.get("seen") if isinstance(reply.get("seen"), dict) else {}
        if seen.get("profiler_removed") is True:
            flag = f"{self.name} switched off the grader's watch"
            if flag not in submission.flags:
                submission.flags.append(flag)
        for watched, _ in submission.watchers:
            api.record_seen(watched, seen)
            if reply.get("course_code") is not False:
                watched.course_calls.append(f"{self.name} is or wraps course code")
        made = reply.get("made") if isinstance(reply.get("made"), list) else []
        calls = reply.get("calls") if isinstance(reply.get("calls"), list) else []
        error = reply.get("error")
        return Call(reply.get("value"), str(error) if error is not None else None, made, calls)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.run(*args, **kwargs)
        if call.error is not None:
            raise StudentError(call.error)
        return call.value

    def is_course_code(self) -> bool:
        """True if the name is bound to the course's own function (asked of the kernel).

        A function of the student's own whose source has the structure of one
        the course ships (a model answer renamed) is flagged for a human.
        """
        submission = current()
        flag_if_shaped_like_course_code(self.name, submission)
        reply = submission.ask_kernel({"op": "describe", "name": self.name})
        return not isinstance(reply, dict) or reply.get("course_code") is not False


class StudentKernel:
    """The student's CUDA kernel *name*, run by the grader (see :mod:`.kernel_runner`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<your kernel {self.name}>"

    def _defined(self) -> None:
        submission = current()
        if self.name in submission.defined_kernels:
            return
        try:
            source = kernel_definition(
                self.name, submission.student_sources, submission.given_sources
            )
        except NotAKernel as error:
            raise api.GradingFailure(
                f"the grader cannot run {self.name} as a CUDA kernel: {error}"
            ) from None
        reply = submission.runner.define(source)
        if "error" in reply:
            raise api.GradingFailure(
                f"{self.name} does not compile as a CUDA kernel ({reply['error']})"
            )
        submission.defined_kernels.add(self.name)

    def is_course_code(self) -> bool:
        """Always False: the kernel is run from the notebook's own source, never the course's.

        A kernel with the structure of one the course ships (a model answer
        renamed) is still the student's to run; it is flagged for a human to
        look at, since a student who just worked through that chapter may
        honestly write the same kernel.
        """
        flag_if_shaped_like_course_code(self.name, current())
        return False

    def __getitem__(self, configuration: tuple[Any, Any]) -> Any:
        grid, block = configuration

        def launch(*args: Any) -> None:
            self._defined()
            reply = current().runner.request(
                op="launch", kernel=self.name, grid=_dims(grid), block=_dims(block), args=list(args)
            )
            if "error" in reply:
                raise StudentError(str(reply["error"]))
            arrays, guarded = reply.get("arrays", []), reply.get("guarded", [])
            buffers = [a["$guarded"] for a in args if isinstance(a, Marker) and "$guarded" in a]
            for mine, theirs in zip(buffers, guarded):
                mine[...] = np.asarray(theirs).reshape(mine.shape)
            for mine, theirs in zip(args, arrays):
                if isinstance(mine, np.ndarray) and isinstance(theirs, np.ndarray):
                    mine[...] = theirs.reshape(mine.shape)

        return launch

    def report(self, kind: str, *args: Any, **kwargs: Any) -> dict:
        """A counted launch of :mod:`demos.patterns.reports` (a kind the runner's table names)."""
        self._defined()
        reply = current().runner.request(
            op="report", kind=kind, kernel=self.name, args=list(args), kwargs=kwargs
        )
        if "error" in reply:
            raise StudentError(str(reply["error"]))
        return dict(reply["report"])


def flag_if_shaped_like_course_code(name: str, submission: Any) -> None:
    """Flag *name* if the student's definition has the structure of a function the course ships."""
    function = definitions(submission.student_sources).get(name)
    if function is not None and matches_course_code(ast.unparse(function)):
        submission.flags.append(f"{name} has the structure of code the course ships")


def _dims(value: Any) -> list[int]:
    dims = [int(v) for v in value] if isinstance(value, (tuple, list)) else [int(value)]
    return (dims + [1, 1, 1])[:3]
