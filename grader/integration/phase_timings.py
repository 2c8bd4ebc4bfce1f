"""Where a notebook's grading time goes: seconds by phase, written for ``python -m grader bench``.

A class's grading time is the sum of its notebooks', and what to make faster
depends on where it goes: starting the sandbox and kernel, running cells in
the kernel, deciding the hidden tests in the grader, or the rest (nbgrader's
own work). :class:`PhaseTimings` measures the first two itself, asks the other
concerns for theirs (:meth:`~grader.integration.sandboxed_kernel.SandboxedExecute.timing_phases`)
and writes them, with the CPU seconds of the grader and of the kernel, to
:attr:`~PhaseTimings.timings_file`.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any

from nbformat import NotebookNode
from traitlets import Unicode

from grader.integration.sandboxed_kernel import SandboxedExecute


class PhaseTimings(SandboxedExecute):
    """The execute preprocessor's seconds by phase, as JSON in :attr:`timings_file`."""

    timings_file = Unicode(
        "",
        help="Where to write the seconds this notebook spent starting its kernel, running cells "
        "in it and deciding hidden tests (JSON; python -m grader bench adds them up); "
        "empty: not written.",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        self._started = time.monotonic()
        self._start_seconds = self._cell_seconds = 0.0
        try:
            return super().preprocess(nb, resources)
        finally:
            self._write_timings()

    def _write_timings(self) -> None:
        if not self.timings_file:
            return
        total = time.monotonic() - self._started
        phases = {
            # the sandbox and kernel start, until the first cell could run
            "start": self._start_seconds,
            "cells_in_kernel": self._cell_seconds,
            **self.timing_phases(),
        }
        phases["other"] = max(0.0, total - sum(phases.values()))
        # CPU, not wall, time: the kernel's (its cgroup's), and this process's with the simulator's
        used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        phases["grader_cpu"] = sum(u.ru_utime + u.ru_stime for u in used)
        kernel_cpu = self.kernel_cpu_seconds()
        if kernel_cpu is not None:
            phases["kernel_cpu"] = kernel_cpu
        Path(self.timings_file).write_text(json.dumps({k: round(v, 3) for k, v in phases.items()}))

    async def async_start_new_kernel_client(self) -> Any:
        try:
            return await super().async_start_new_kernel_client()
        finally:
            self._start_seconds = time.monotonic() - self._started

    async def async_execute_cell(
        self, cell: NotebookNode, cell_index: int, *args: Any, **kwargs: Any
    ) -> NotebookNode:
        started = time.monotonic()
        cell = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
        self._cell_seconds += time.monotonic() - started
        return cell
