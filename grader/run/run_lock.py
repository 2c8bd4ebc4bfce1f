"""One grading run per assignment at a time: a lock file held for the whole run.

Two runs of one assignment would share ``grading/<assignment>/<student>/``,
the template gradebook and the course's autograded folders: each would wipe
the other's copies mid-grading, and correct notebooks would score nothing. So
``python -m grader autograde`` holds ``<course>/grading/<assignment>.lock``
(``fcntl.flock``) from start to end; the kernel frees it when the process
ends, however it ends, so a killed run never blocks the next one. The holder
writes its pid, host and start time inside, and a second run is refused with
one line that names them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path


class Busy(SystemExit):
    """Another run holds the assignment's lock (the message names it; exit status 1)."""


def lock_path(course: Path, assignment: str) -> Path:
    """The lock file of *assignment*'s grading runs."""
    return course / "grading" / f"{assignment}.lock"


def holder(path: Path) -> str:
    """Who holds the lock at *path*, as one phrase (from what the holder wrote in it)."""
    try:
        info = json.loads(path.read_text())
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextlib.contextmanager
def assignment_lock(course: Path, assignment: str) -> Iterator[Path]:
    """Hold *assignment*'s lock for the block; :class:`Busy` at once if another run holds it."""
    path = lock_path(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(
                f"grader: {assignment} is being graded by another run ({holder(path)}); "
                f"wait for it to end (lock: {path})"
            ) from None
        started = time.strftime("%Y-%m-%d %H:%M:%S %z")
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": started}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        yield path
    finally:
        os.close(fd)  # frees the lock; the file stays (removing it would race a waiting run)
