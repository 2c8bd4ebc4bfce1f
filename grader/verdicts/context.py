"""The submission a hidden test is judging: its cells, its kernel, the grader's simulator.

:mod:`.hidden_tests` sets one :class:`Submission` as current while a hidden
test runs; the stand-ins for the student's functions and kernels
(:mod:`.proxies`) and :func:`.api.watch` find it here.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from grader.verdicts.kernel_runner import KernelRunner

_CURRENT: contextvars.ContextVar[Submission] = contextvars.ContextVar("submission")


@dataclass
class Submission:
    """What the grader knows of one notebook while its hidden tests run.

    *ask_kernel* sends one request to the student's kernel and returns its
    reply (already decoded, untrusted data); *student_sources* are the
    student's cells before the test, *given_sources* the cells the assignment
    gives (restored from the release by nbgrader).
    """

    ask_kernel: Callable[[dict], dict]
    student_sources: list[str]
    given_sources: list[str]
    runner: KernelRunner
    watchers: list[tuple[Any, tuple[str, ...]]] = field(default_factory=list)
    defined_kernels: set[str] = field(default_factory=set)
    flags: list[str] = field(default_factory=list)  # for a human to look at, whatever the verdict

    @contextlib.contextmanager
    def watching(self, watched: Any, forbidden: tuple[str, ...]) -> Iterator[None]:
        self.watchers.append((watched, tuple(forbidden)))
        try:
            yield
        finally:
            self.watchers.pop()

    def forbidden(self) -> list[str]:
        return sorted({name for _, names in self.watchers for name in names})

    @contextlib.contextmanager
    def as_current(self) -> Iterator[Submission]:
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


def current() -> Submission:
    """The submission being judged (only inside a hidden test)."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise RuntimeError(
            "grading helpers work only while the grader runs a hidden test"
        ) from None
