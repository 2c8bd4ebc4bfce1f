"""The grading sandbox's memory limit: a watcher that counts what a kernel really uses.

An address-space or data-segment limit (``RLIMIT_AS``, ``RLIMIT_DATA``) is the
usual way to cap a process's memory, but a GPU kernel cannot live with one at a
useful size: on an H200, Keras on JAX training chapter 5's small network maps
8.7 GB of data segment (thread stacks, the CUDA libraries' heaps) and fails to
start its threads under a 4 GB ``RLIMIT_DATA``, while a CPU kernel running the
same notebook needs a fraction of that. The same correct notebook would score
10/10 on a CPU grader and 0 on a GPU grader.

So the limit is on *anonymous and shared resident memory* (``RssAnon`` and
``RssShmem`` in ``/proc/PID/status``): the pages a program has really written,
such as NumPy arrays or a shared-memory block, and not the shared libraries it
maps or the address space it only reserves. A watcher process polls it for
the kernel and everything it started (and, with a user id of its own, every
process of that user); over the limit it kills them all and leaves a flag for
the reviewer. Every two seconds it also adds up the files the notebook wrote in
its writable folders and its ``/tmp`` (its own inside bubblewrap, seen
through ``/proc/PID/root``; else what its user left in the machine's) against
the policy's disk limit. The kernel launcher also keeps a far larger
``RLIMIT_DATA`` (see :func:`data_backstop`) so that one absurd allocation
still fails at once with a ``MemoryError``.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Callable, Iterable, Set
from pathlib import Path

from grader.sandbox.policy import Policy, in_bubblewrap
from grader.sandbox.processes import die_with_parent, processes_of
from grader.sandbox.safe_files import SHARED_TEMP, disk_usage

#: Room above the memory limit for address space that is reserved, not used.
BACKSTOP_EXTRA = 32 << 30


def data_backstop(memory_bytes: int) -> int:
    """The ``RLIMIT_DATA`` that goes with a memory limit: only absurd requests fail."""
    return memory_bytes + BACKSTOP_EXTRA


def _anonymous_bytes(pid: int) -> int:
    """``RssAnon`` plus ``RssShmem`` of one process: the pages it has written itself."""
    total = 0  # stays 0 for a kernel thread or a zombie
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("RssAnon:", "RssShmem:")):
            total += int(line.split()[1]) * 1024
    return total


def _running(pid: int) -> bool:
    """Whether *pid* exists and has not ended (a zombie waiting for its parent has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _children(pid: int) -> list[int]:
    """Processes started by any thread of *pid* (the kernel's own children files)."""
    found = []
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"{task.path}/children") as f:
                found += [int(child) for child in f.read().split()]
    except OSError:  # ended while we looked
        pass
    return found


def watched(root: int, strays: Set[int] = frozenset()) -> dict[int, int]:
    """Anonymous resident bytes of *root*, its descendants and the processes in *strays*.

    Called several times a second beside every notebook of a grading run, so it
    reads only the watched processes' files, not those of every process on the
    machine. *strays* are processes that left the tree (a daemon re-parented to
    init) but belong to the sandbox's user.
    """
    members = {root} if _running(root) else set()
    stack = list(members)
    while stack:
        for child in _children(stack.pop()):
            if child not in members:
                members.add(child)
                stack.append(child)
    members |= strays
    members.discard(os.getpid())  # the watcher is the kernel's child too
    usage = {}
    for pid in members:
        try:
            usage[pid] = _anonymous_bytes(pid)
        except OSError:  # ended while we looked
            pass
    return usage


def _sandbox_temp(pids: Iterable[int]) -> list[str]:
    """The kernel's own /tmp, /var/tmp and /dev/shm, seen from outside its mount namespace.

    Files there are memory, and a file nobody maps is in no process's resident
    memory: counted as files, they cannot pass both limits unseen.
    """
    host = os.stat("/tmp").st_dev
    for pid in pids:
        root = f"/proc/{pid}/root"
        try:
            if os.stat(f"{root}/tmp").st_dev != host:
                return [f"{root}{folder}" for folder in SHARED_TEMP]
        except OSError:
            continue
    return []


def _disk_used(policy: Policy, pids: Iterable[int]) -> int:
    """Bytes of files the notebook wrote: its folders, and its /tmp (its own, or the machine's)."""
    used = disk_usage(policy.writable)
    if in_bubblewrap(policy.level):
        used += disk_usage(_sandbox_temp(pids))
    elif policy.uid is not None:
        used += disk_usage(list(SHARED_TEMP), owner=policy.uid)
    return used


def watch(
    root: int,
    policy: Policy,
    on_exceeded: Callable[[str, int], None],
    interval: float = 0.2,
    user_scan_every: int = 10,
) -> None:
    """Poll until *root* ends; over a limit, call *on_exceeded* (``"memory"`` or ``"disk"``,
    the amount), then kill what is watched.

    With a sandbox user, its processes outside the tree are looked for on every
    *user_scan_every*-th poll (a ``stat`` of every process: the dear part), and
    the files are counted as often: every 2 s (on an H200 node grading sixteen
    notebooks at once, the watchers used about 0.9 CPU-s per notebook when it
    was every second; a single file is capped in size as it is written).
    """
    strays: set[int] = set()
    uid = policy.uid
    for poll in itertools.count():
        scan = poll % user_scan_every == 0
        if uid is not None and scan:
            strays = processes_of(uid)
        usage = watched(root, strays)
        if root not in usage:
            return
        exceeded = None
        if (memory := sum(usage.values())) > policy.memory_bytes:
            exceeded = ("memory", memory)
        elif scan and policy.writable and (disk := _disk_used(policy, usage)) > policy.disk_bytes:
            exceeded = ("disk", disk)
        if exceeded:
            # Report first: the watcher dies with the kernel (its parent).
            on_exceeded(*exceeded)
            for pid in usage:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            return
        time.sleep(interval)


def start_watcher(policy: Policy, on_exceeded: Callable[[str, int], None]) -> None:
    """Fork a watcher of this process (which is about to ``exec`` the kernel)."""
    kernel = os.getpid()
    if os.fork():
        return
    # The watcher: immune to the interrupts jupyter_client sends the kernel's
    # process group, gone if the kernel's launcher disappears.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    try:
        if os.getppid() == kernel:
            watch(kernel, policy, on_exceeded)
    finally:
        os._exit(0)
