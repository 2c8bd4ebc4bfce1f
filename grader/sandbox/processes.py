"""The sandbox users' processes: which user id a notebook gets, and ending what it started.

Every sandboxed notebook runs under a user id of its own (from :data:`BASE_UID`
on), so that after the notebook the grader can kill every process of that id,
including daemons that left the kernel's process tree. Two grading runs on one
machine (two assignments graded by two people, a plain ``nbgrader autograde``
beside ``python -m grader autograde``) must then never share an id, or one run
would kill the other's kernels: :func:`claim_uids` hands ids out under a lock
file each, held for as long as the run lasts.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

#: First user id the sandboxes use.
BASE_UID = 61000
#: How many ids the sandboxes may use, from BASE_UID on.
UID_SPAN = 4096

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Have Linux kill this process when its parent ends (``PR_SET_PDEATHSIG``).

    For the grader's helper processes (a student's grading fork, the memory
    watcher), so that none outlives the process it works for.
    """
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def processes_of(uid: int) -> set[int]:
    """Every process of user *uid* (one ``stat`` each, no file read)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
            except OSError:  # ended while we looked
                pass
    return found


def kill_user_processes(uid: int, grace: float = 0.5) -> int:
    """Kill every process of user *uid* (the sandbox's); how many there were."""
    victims = processes_of(uid)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(victims)


def _lock_folder() -> Path:
    """A folder only root may write, for the lock files of the claimed ids."""
    for parent in ("/run", tempfile.gettempdir()):
        folder = Path(parent) / "gpu-course-grader"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            continue
        st = folder.lstat()
        if folder.is_symlink() or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            continue  # someone else's folder: never lock through it
        return folder
    raise SystemExit("no private folder for the grader's lock files in /run or the temp folder")


@contextlib.contextmanager
def claim_uids(count: int) -> Iterator[list[int]]:
    """*count* sandbox user ids no other grading run on this machine holds, until the block ends.

    An id whose lock is free but which still has processes (left by a run that
    was killed) is skipped, not reused.
    """
    folder = _lock_folder()
    held: list[tuple[int, int]] = []
    try:
        for uid in range(BASE_UID, BASE_UID + UID_SPAN):
            if len(held) == count:
                break
            fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            if processes_of(uid):
                # free lock, live processes: a killed run's leftovers, whose own clean-up
                # would kill this run's kernels. Never share the id; take the next one.
                os.close(fd)
                continue
            held.append((uid, fd))
        if len(held) < count:
            raise SystemExit(f"only {len(held)} free sandbox user ids for {count} workers")
        yield [uid for uid, _ in held]
    finally:
        for _, fd in held:
            os.close(fd)


def unreachable(path: Path, uid: int) -> str | None:
    """The first folder above *path* that user *uid* cannot pass through, if any."""
    for folder in [*reversed(path.parents), path]:
        try:
            st = folder.stat()
        except OSError:
            return str(folder)
        mode = st.st_mode
        allowed = (mode & 0o100 if st.st_uid == uid else 0) or mode & 0o001
        if not allowed:
            return str(folder)
    return None
