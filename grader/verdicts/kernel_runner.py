"""Run a student's checked kernels in Numba's CUDA simulator, in the notebook's sandbox.

:class:`KernelRunner` talks to :mod:`demos.grading.kernel_host`, which the
notebook's box (:meth:`grader.sandbox.box.Box.runner_command`) starts in a sandbox of
its own: the notebook's user id, memory cgroup and limits, but its own
process tree, no network and no writable folder. No student source is ever
executed in the grader's own processes, even source that
:mod:`.kernel_source` accepted. Requests and replies are lines of
:mod:`demos.grading.wire` text on the runner's stdin and stdout.
"""

from __future__ import annotations

import selectors
import subprocess
from typing import Any

from demos.grading import wire
from grader.verdicts.kernel_source import BUILTINS, EXCEPTIONS, TYPE_NAMES, KernelSource

#: How long one request may take before the runner is stopped (seconds).
REQUEST_TIMEOUT = 60.0

#: The names a checked kernel may use (sent with each definition: the runner
#: cannot import the checker, which lives with the grader).
ALLOWED_NAMES = {
    "builtins": sorted(BUILTINS),
    "exceptions": sorted(EXCEPTIONS),
    "types": sorted(TYPE_NAMES),
}


class KernelRunnerError(RuntimeError):
    """The runner stopped, timed out or answered nonsense: the test cannot be decided."""


class KernelRunner:
    """A runner process for one notebook, started in its sandbox on first use.

    *command* starts :mod:`demos.grading.kernel_host` in the sandbox; it is
    given by :meth:`place` once the notebook's box exists. Without one the
    runner refuses to start: it never runs outside a sandbox.
    """

    def __init__(self, command: list[str] | None = None, timeout: float = REQUEST_TIMEOUT) -> None:
        self.timeout = timeout
        self.command = command
        self._process: subprocess.Popen[str] | None = None

    def place(self, command: list[str]) -> None:
        """Run in the sandbox that *command* starts (a runner already started is stopped)."""
        self.close()
        self.command = command

    def _start(self) -> subprocess.Popen[str]:
        if not self.command:
            raise KernelRunnerError("the kernel runner has no sandbox to run in")
        return subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def start(self) -> None:
        """Start the process now (its imports then overlap with the notebook's kernel starting)."""
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()

    def define(self, source: KernelSource) -> dict:
        """Define a checked kernel (and its device functions) in the runner."""
        return self.request(op="define", source=source.as_plain(), allowed=ALLOWED_NAMES)

    def request(self, **request: Any) -> dict:
        """Send one request; its reply (``{"error": ...}`` when the kernel failed)."""
        self.start()
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(wire.dumps(request) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            self.close()
            raise KernelRunnerError("the kernel runner stopped") from None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(self.timeout):
                self.close()
                raise KernelRunnerError(f"the kernel did not finish in {self.timeout:.0f} s")
        line = process.stdout.readline()
        if not line:
            self.close()
            raise KernelRunnerError("the kernel runner stopped")
        try:
            reply = wire.loads(line)
        except (wire.WireError, ValueError, TypeError, RecursionError, MemoryError):
            reply = None
        if not isinstance(reply, dict):
            self.close()
            raise KernelRunnerError("the kernel runner answered nonsense")
        return reply

    def close(self) -> None:
        """Stop the runner (and, with it, its sandbox)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __enter__(self) -> KernelRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
