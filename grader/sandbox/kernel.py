"""Launcher of what runs student code: limits, then the sandbox, then the program.

Two programs, each in the sandbox of one notebook:

* the kernel of the ``grader-sandbox`` kernelspec (from kernel.json:
  ``python -m grader.sandbox.kernel POLICY.json CONNECTION_FILE``). Before it
  becomes the kernel it forks the memory watcher (:mod:`grader.sandbox.memory_watch`),
  then joins the notebook's memory cgroup (when :mod:`grader.sandbox.box` made one),
  so the watcher is not counted in it;
* the kernel runner, :mod:`demos.grading.kernel_host`, which runs the
  student's CUDA kernels in the simulator for the hidden tests
  (``python -m grader.sandbox.kernel --runner POLICY.json``): the notebook's
  cgroup and limits, an address-space limit of the same size (it needs no
  GPU), and room for a simulated block's threads.

Both start with an allow-list of the grader's environment
(:func:`grader.sandbox.environment.kept_environment`), never the rest of it.
"""

from __future__ import annotations

import os
import resource
import sys

from grader.sandbox import cgroups
from grader.sandbox.environment import kept_environment, kernel_environment
from grader.sandbox.flags import record_flag
from grader.sandbox.isolation import kernel_command, runner_command
from grader.sandbox.memory_watch import data_backstop, start_watcher
from grader.sandbox.policy import Policy, in_bubblewrap

#: Threads the kernel runner may start besides the notebook's processes: a simulated
#: block of 1,024 threads runs one thread each.
RUNNER_THREADS = 1024 + 64


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


def _clean_environment(policy: Policy, extra: dict[str, str]) -> None:
    """Replace this process's environment by the allow-list, the policy's and *extra*."""
    kept = kept_environment(os.environ)
    os.environ.clear()
    os.environ.update(kept | kernel_environment(policy) | extra)


def start_runner(policy: Policy) -> None:
    """Become the notebook's kernel runner, in its own sandbox (see the module docstring)."""
    command = runner_command(policy)
    _clean_environment(policy, {"NUMBA_ENABLE_CUDASIM": "1", "PYTHONWARNINGS": "ignore"})
    if policy.cgroup:
        cgroups.join(policy.cgroup, os.getpid())
    for limit, value in (
        (resource.RLIMIT_AS, policy.memory_bytes),
        (resource.RLIMIT_CPU, policy.cpu_seconds),
        (resource.RLIMIT_NPROC, policy.processes + RUNNER_THREADS),
        (resource.RLIMIT_FSIZE, policy.disk_bytes),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))
    os.execvp(command[0], command)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--runner"]:
        start_runner(Policy.load(argv[1]))
        return
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
    # The watcher is the grader's: it keeps the grader's variables (where flags go).
    start_watcher(policy, _report)
    # The kernel gets neither nbgrader's process id, nor the course secret (hidden
    # tests run in the grader's process, grader.verdicts), nor anything else of
    # the instructor's shell: only the allow-list.
    _clean_environment(policy, {})
    if policy.cgroup:
        cgroups.join(policy.cgroup, os.getpid())
    apply_limits(policy)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
