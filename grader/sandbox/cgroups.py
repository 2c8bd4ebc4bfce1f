"""A memory cgroup per notebook: a limit that also counts shared memory and in-memory files.

The memory watcher (:mod:`grader.sandbox.memory_watch`) counts the pages a notebook's
processes hold; a file in ``/tmp`` or ``/dev/shm`` (memory on most machines,
and inside bubblewrap) belongs to no process, so 1.5 GB there passed a 1 GB
limit. The kernel's memory controller charges those pages to the cgroup of
whoever wrote them. So where this machine lets root make a child cgroup with
the memory controller (cgroups v2, or the v1 ``memory`` hierarchy that some
containers and older clusters still have), each notebook gets one with
``memory.max`` set and is killed by the kernel past it; the grader then
reads the cgroup's ``oom_kill`` count to say why the notebook stopped. Under
cgroups v2 the grader's own cgroup must first be made able to have such
children (:mod:`grader.sandbox.cgroup_parent`, where the grader moves itself into a
leaf of its own when it may). Where
none can be made, :func:`create` answers ``None`` and the watcher and the
size-limited sandbox file systems are the limit (``python -m grader sandbox``
says which).
"""

from __future__ import annotations

import functools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox.cgroup_parent import FALLBACK, Placement, place, v2_mount

#: Room above the notebook's memory limit for what the kernel charges besides its
#: pages (page tables, the page cache of the libraries it reads, which is reclaimed first).
SLACK = 0.25


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``{"": v2 path, "memory": v1 path}``."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


@functools.cache
def placement() -> Placement:
    """Where this process makes the notebooks' v2 memory cgroups (worked out once per process).

    A grading run asks at its start, before any worker is started, so that a
    needed move into the grader's own leaf (:mod:`grader.sandbox.cgroup_parent`)
    concerns its own process alone.
    """
    if os.environ.get("GRADER_CGROUP") == "off":
        return Placement(None, FALLBACK, "GRADER_CGROUP=off chooses none")
    if os.geteuid() != 0:
        return Placement(None, FALLBACK, "the grader is not root")
    mount = v2_mount()
    if mount is None:
        return Placement(None, FALLBACK, "no cgroups v2 on this machine")
    return place(mount, _own_paths().get("", "/"))


def _v1_parent() -> Path | None:
    own = _own_paths().get("memory")
    parent = Path("/sys/fs/cgroup/memory" + (own or "/"))
    if own is not None and (parent / "memory.limit_in_bytes").is_file():
        return parent if os.access(parent, os.W_OK) else None
    return None


@dataclass
class MemoryCgroup:
    """One notebook's cgroup: join it, read why it ended, remove it."""

    path: Path

    @property
    def version(self) -> int:
        return 1 if (self.path / "memory.oom_control").exists() else 2

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except OSError:
            pass
        return 0

    def cpu_seconds(self) -> float | None:
        """CPU time its processes used (cgroups v2 counts it in every cgroup; v1 here does not)."""
        try:
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def remove(self) -> None:
        """Kill what is still inside, then remove the cgroup."""
        for _ in range(50):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
        try:
            self.path.rmdir()
        except OSError:
            pass


def remove_left_behind(name: str) -> bool:
    """Remove the cgroup *name* a killed run left, killing what is still in it; whether one was.

    A notebook's cgroup is named after its sandbox user id (:mod:`grader.sandbox.box`),
    and a run that was killed could not remove its own. The next run that
    claims the id (:func:`grader.sandbox.processes.claim_uids`: no process of it is
    left, no live run holds it) removes it before use, so its notebook never
    starts in a cgroup that still holds another run's processes or charges.
    """
    found = False
    for parent in (placement().parent, _v1_parent()):
        if parent is not None and (parent / name).is_dir():
            MemoryCgroup(parent / name).remove()
            found = True
    return found


def join(path: str, pid: int) -> None:
    """Move process *pid* (and so everything it starts later) into the cgroup at *path*."""
    (Path(path) / "cgroup.procs").write_text(str(pid))


def create(name: str, limit_bytes: int) -> MemoryCgroup | None:
    """A new memory cgroup *name* limited to *limit_bytes* plus :data:`SLACK`, or ``None``.

    ``GRADER_CGROUP=off`` chooses no cgroup on purpose (to test the fallback).
    """
    if os.environ.get("GRADER_CGROUP") == "off" or os.geteuid() != 0:
        return None
    limit = str(int(limit_bytes * (1 + SLACK)))
    for version, parent in ((2, placement().parent), (1, _v1_parent())):
        if parent is None:
            continue
        path = parent / name
        try:
            path.mkdir(exist_ok=True)
            memory, swap, swap_limit = (
                ("memory.max", "memory.swap.max", "0")
                if version == 2
                else ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", limit)
            )
            (path / memory).write_text(limit)
            if (path / swap).is_file():  # swap counted too where the kernel accounts it
                (path / swap).write_text(swap_limit)
        except OSError:
            try:
                path.rmdir()
            except OSError:
                pass
            continue
        return MemoryCgroup(path)
    return None


def available() -> int:
    """The cgroup version a notebook's memory cgroup would have here, 0 where none can be made."""
    probe = create(f"grader-probe-{os.getpid()}", 1 << 30)
    if probe is None:
        return 0
    version = probe.version
    probe.remove()
    return version


def describe() -> str:
    """One line for ``python -m grader sandbox``: which memory limit applies, and why."""
    version = available()
    v2 = placement()
    if version == 2:
        return (
            "memory: a cgroup per notebook counts shared memory and files in memory "
            f"(cgroups v2, {v2.line()})"
        )
    if version == 1:
        return (
            "memory: a cgroup per notebook counts shared memory and files in memory "
            "(cgroups v1 memory hierarchy, where no leaf is needed)"
        )
    return (
        f"memory: no cgroup per notebook ({v2.line()}); the watcher counts mapped shared "
        "memory against --memory, files in the sandbox's /tmp, /var/tmp and /dev/shm count "
        "against --disk and are capped in size"
    )
