"""Writing the course's gradebook while another program may hold it.

The gradebook is one sqlite file: while the formgrader saves a grade, or an
instructor's query runs, a writer waits; sqlite gives up after 5 s with a
three-line SQLAlchemy error, which made a correctly graded student ``failed``.
A merge instead tries again for a while (:func:`while_locked`), and past that
says so in one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: How long a merge waits, in all, for a gradebook another program holds (the formgrader).
GRADEBOOK_WAIT_SECONDS = 120.0


def while_locked(write: Callable[[], T], wait: float | None = None) -> T:
    """Run *write* again while sqlite says the gradebook is locked, up to *wait* seconds.

    sqlite itself waits 5 s for a lock; a formgrader saving a grade or an
    instructor's query holds it longer. Past the wait, one line says so.
    """
    from sqlalchemy.exc import OperationalError

    wait = GRADEBOOK_WAIT_SECONDS if wait is None else wait
    end = time.monotonic() + wait
    while True:
        try:
            return write()
        except OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= end:
                if "locked" in str(error):
                    raise GradebookLocked(
                        f"the gradebook stayed locked by another program for {wait:g} s"
                    ) from None
                raise
            time.sleep(1.0)


class GradebookLocked(RuntimeError):
    """Another program held the course's gradebook for longer than a merge waits."""
