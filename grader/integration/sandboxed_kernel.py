"""nbgrader's ``Execute`` with the kernel in the grading sandbox, whoever started the grading.

A student's code must never run with the instructor's rights, and both ways of
grading must give the same points: so the kernel of every notebook starts in
a box of its own (:mod:`grader.sandbox.box`), with the limits and user id
``python -m grader autograde`` wrote into :attr:`SandboxedExecute.sandbox_policy`,
or, for plain ``nbgrader autograde`` (the command line or the formgrader's
button), with this machine's strongest level and the default limits.

This is the base of the execute preprocessor's other concerns
(:mod:`grader.integration.preprocessors` puts them together): it offers them
hooks into the box's life, :meth:`~SandboxedExecute.box_opened` (the hidden
tests' runner goes into the box) and :meth:`~SandboxedExecute.kernel_cache`
(the solution's compiled GPU kernels), and :meth:`~SandboxedExecute.timing_phases`
for the seconds each concern spent (:mod:`grader.integration.phase_timings`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Unicode

from grader.sandbox import box as boxes
from grader.sandbox.flags import record_flag
from grader.sandbox.policy import Policy


class SandboxedExecute(Execute):
    """``Execute`` whose kernel is a ``grader-sandbox`` kernel in a fresh box per notebook."""

    sandbox_policy = Unicode(
        "",
        help="Limits and user id for the sandboxed kernel (JSON of grader.sandbox.policy.Policy), "
        "written by python -m grader; empty: this machine's strongest sandbox, default limits.",
    ).tag(config=True)
    box_folder = Unicode(
        "", help="Where the notebook's sandbox is made; empty: a temporary folder."
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        self._box: boxes.Box | None = None
        with contextlib.ExitStack() as self._box_stack:
            try:
                return super().preprocess(nb, resources)
            finally:
                if self._box is not None:
                    for kind, reason in self._box.close():
                        self.log.warning("Notebook over its %s limit: %s", kind, reason)
                        record_flag(kind, reason)

    def create_kernel_manager(self) -> Any:
        """The kernel manager of a ``grader-sandbox`` kernel in a fresh box for this notebook."""
        notebook_dir = Path(self.resources.get("metadata", {}).get("path") or ".").resolve()
        if self.sandbox_policy:
            limits, folder = Policy.load(self.sandbox_policy), Path(self.box_folder)
        else:
            limits, folder = boxes.plain_setting(self._box_stack)
        # nbgrader runs in <course>/autograded/<student>/<assignment>: the course stays out.
        private = [Path.cwd(), *notebook_dir.parents[:3]]
        self._box = boxes.open_box(limits, notebook_dir, folder, private, self.kernel_cache())
        for left_out in self._box.left_out:
            record_flag("files", left_out)
        self.box_opened(self._box)
        self.kernel_name = boxes.KERNEL_NAME
        km = super().create_kernel_manager()
        km.kernel_spec_manager = KernelSpecManager(kernel_dirs=self._box.kernel_dirs)
        # Unix sockets in the box's socket folder: the kernel has no network.
        km.transport = "ipc"
        km.ip = str(self._box.sockets / "kernel")
        km.connection_file = str(self._box.runtime / "kernel.json")
        return km

    def box_opened(self, box: boxes.Box) -> None:
        """Called once the notebook's box exists, before its kernel starts."""

    def kernel_cache(self) -> Any:
        """The compiled GPU kernels the box starts with (None: none)."""
        return None

    def timing_phases(self) -> dict[str, float]:
        """Wall-clock seconds by phase that the other concerns measured (none here)."""
        return {}

    def kernel_cpu_seconds(self) -> float | None:
        """CPU seconds the notebook's processes used (its cgroup's), where that is known."""
        return None if self._box is None else self._box.cpu_seconds
