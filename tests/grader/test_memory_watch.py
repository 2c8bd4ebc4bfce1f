"""grader.sandbox.memory_watch: a notebook's and its sandbox user's processes stopped over limit."""

from __future__ import annotations

import subprocess
import sys
import time

from grader.sandbox import isolation as sandbox
from grader.sandbox import memory_watch, processes
from helpers import needs_root


def test_memory_watcher_stops_a_process_tree_that_writes_too_much() -> None:
    # a child that writes 400 MB, under a parent that uses almost nothing
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; subprocess.run([sys.executable, '-c', "
            '\'import time; x = bytearray(400 << 20); x[::4096] = b"y" * len(x[::4096]); '
            "time.sleep(60)'])",
        ]
    )
    reports = []
    try:
        policy = sandbox.Policy(level="limits", memory_bytes=200 << 20)
        memory_watch.watch(parent.pid, policy, lambda *report: reports.append(report), 0.05)
        assert parent.wait(timeout=10) == -9
    finally:
        parent.kill()
    assert len(reports) == 1 and reports[0][0] == "memory" and reports[0][1] > 200 << 20
    assert memory_watch.data_backstop(4 << 30) > 8 << 30  # room for a GPU library's reservations


@needs_root("to start a process as another user")
def test_memory_watcher_counts_a_sandbox_users_process_that_left_the_tree() -> None:
    uid = processes.BASE_UID + 99
    kernel = subprocess.Popen(["sleep", "60"])  # stands in for the kernel: uses nothing
    # a daemon of the sandbox user, re-parented away from the kernel, writing 300 MB
    subprocess.run(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            sys.executable,
            "-c",
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    x = bytearray(300 << 20); x[::4096] = b'y' * len(x[::4096]); time.sleep(60)",
        ],
        check=True,
    )
    time.sleep(1)
    reports = []
    try:
        policy = sandbox.Policy(level="uid", uid=uid, memory_bytes=200 << 20)
        memory_watch.watch(kernel.pid, policy, lambda *report: reports.append(report), 0.05)
        assert kernel.wait(timeout=10) == -9
        time.sleep(0.5)
        # the daemon was killed too (it may linger as a zombie)
        assert not [pid for pid in processes.processes_of(uid) if memory_watch._running(pid)]
    finally:
        kernel.kill()
        processes.kill_user_processes(uid)
    assert len(reports) == 1 and reports[0][1] > 200 << 20
