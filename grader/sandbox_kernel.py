"""Kernel launcher of the ``grader-sandbox`` kernelspec: limits, then the sandbox, then ipykernel.

Before it becomes the kernel it forks the memory watcher (:mod:`grader.memory_watch`).

Usage (from kernel.json): ``python -m grader.sandbox_kernel POLICY.json CONNECTION_FILE``.
"""

from __future__ import annotations

import os
import resource
import sys

from grader.flags import record_flag
from grader.memory_watch import data_backstop, start_watcher
from grader.sandbox import Policy, kernel_command, kernel_environment


def _report_memory(used: int) -> None:
    record_flag(
        "memory", f"the notebook used {used / 2**30:.1f} GiB of memory; its kernel was stopped"
    )


def apply_limits(policy: Policy) -> None:
    """Resource limits inherited by the kernel and everything it starts."""
    for limit, value in (
        # the real limit is the watcher's; this one only stops absurd requests at once
        (resource.RLIMIT_DATA, data_backstop(policy.memory_bytes)),
        (resource.RLIMIT_CPU, policy.cpu_seconds),
        (resource.RLIMIT_NPROC, policy.processes),
        (resource.RLIMIT_FSIZE, policy.file_bytes),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))


def main(argv: list[str]) -> None:
    policy_file, connection_file = argv
    policy = Policy.load(policy_file)
    if policy.uid is not None and os.geteuid() == 0:
        # jupyter_client writes the connection file readable by its owner only.
        os.chown(connection_file, policy.uid, policy.uid)
        # nbgrader starts the kernel in the notebook's (per-student) autograded folder.
        for path in [os.getcwd(), *os.listdir()]:
            os.chown(path, policy.uid, policy.uid)
    command = kernel_command(policy, connection_file, os.getcwd())
    # The kernel cannot see nbgrader's process id from its own process tree; the
    # sandbox ends the kernel when nbgrader goes instead.
    os.environ.pop("JPY_PARENT_PID", None)
    os.environ.update(kernel_environment(policy))
    start_watcher(policy.memory_bytes, policy.uid, _report_memory)
    apply_limits(policy)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
