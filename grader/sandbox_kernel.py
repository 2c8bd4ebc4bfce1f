"""Kernel launcher of the ``grader-sandbox`` kernelspec: limits, then the sandbox, then ipykernel.

Before it becomes the kernel it forks the memory watcher (:mod:`grader.memory_watch`),
then joins the notebook's memory cgroup (when :mod:`grader.box` made one), so
the watcher is not counted in it.

Usage (from kernel.json): ``python -m grader.sandbox_kernel POLICY.json CONNECTION_FILE``.
"""

from __future__ import annotations

import os
import resource
import sys

from grader import cgroups
from grader.flags import record_flag
from grader.memory_watch import data_backstop, start_watcher
from grader.sandbox import Policy, in_bubblewrap, kernel_command, kernel_environment
from grader.verdicts import SECRET_VARIABLE


def _report(kind: str, used: int) -> None:
    what = "of memory" if kind == "memory" else "of files"
    record_flag(kind, f"the notebook used {used / 2**30:.1f} GiB {what}; its kernel was stopped")


def apply_limits(policy: Policy) -> None:
    """Resource limits inherited by the kernel and everything it starts."""
    for limit, value in (
        # the real limit is the watcher's; this one only stops absurd requests at once
        (resource.RLIMIT_DATA, data_backstop(policy.memory_bytes)),
        (resource.RLIMIT_CPU, policy.cpu_seconds),
        (resource.RLIMIT_NPROC, policy.processes),
        (resource.RLIMIT_FSIZE, policy.disk_bytes),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))


def main(argv: list[str]) -> None:
    policy_file, connection_file = argv
    policy = Policy.load(policy_file)
    if policy.uid is not None and os.geteuid() == 0:
        # jupyter_client writes the connection file readable by its owner only.
        os.chown(connection_file, policy.uid, policy.uid)
    # nbgrader starts the kernel in the folder it writes the graded notebook into;
    # the kernel works in its copy instead (bound at the same path by bubblewrap).
    command = kernel_command(policy, connection_file, os.getcwd())
    if policy.workdir and not in_bubblewrap(policy.level):
        os.chdir(policy.workdir)
    # The kernel cannot see nbgrader's process id from its own process tree; the
    # sandbox ends the kernel when nbgrader goes instead.
    os.environ.pop("JPY_PARENT_PID", None)
    # The secret that seeds the hidden inputs is the grader's alone: hidden tests
    # run in the grader's process (grader.verdicts), never in the kernel.
    os.environ.pop(SECRET_VARIABLE, None)
    os.environ.update(kernel_environment(policy))
    start_watcher(policy, _report)
    if policy.cgroup:
        cgroups.join(policy.cgroup, os.getpid())
    apply_limits(policy)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
