"""Which notebook a free grading worker takes next, across several assignments' classes.

A class can be graded only once its solution has been timed (the cell limits
of :mod:`grader.integration.cell_budgets`, a run of the solution notebook that takes from
seconds to a minute). Waiting for every solution before grading anything would
leave all workers idle for as long as the slowest solution takes; so each
class joins the queue when its own solution is timed, and a free worker takes
the next student of the most costly class that is ready (by its solution's
seconds; classes of unknown cost after those, in the order given). The slow
notebooks still start early and the quick ones fill the end of the run
(longest-processing-time-first), while the cheap classes use the workers that
would otherwise wait.

A solution being timed takes a worker's share of the machine: while *k*
solutions are timed, at most ``workers - k`` notebooks are graded. So the
timing runs are not slowed by grading (their times set the cell limits: on a
busy machine the limits would grow, and a looping notebook would hold its
worker longer), and a machine with fewer workers than classes times every
solution first, as before.
"""

from __future__ import annotations

import threading
from collections import deque

__all__ = ["ClassQueue"]


class ClassQueue:
    """Students of several classes, handed out one at a time to the grading workers.

    *classes*: each class's students, in the order they are graded. Classes
    are not ready until :meth:`ready` is called for them (their solutions are
    being timed). *workers*: the notebooks graded at once when no solution is
    being timed; a worker hands its notebook back with :meth:`done`.
    """

    def __init__(self, classes: list[list[str]], workers: int) -> None:
        self._left = [deque(students) for students in classes]
        self._cost: list[float | None] = [None] * len(classes)
        self._ready = [False] * len(classes)
        self._workers, self._grading = workers, 0
        self._changed = threading.Condition()

    def ready(self, index: int, cost: float | None) -> None:
        """Class *index* may be graded; a notebook of it costs *cost* seconds (None: unknown)."""
        with self._changed:
            self._ready[index], self._cost[index] = True, cost
            self._changed.notify_all()

    def done(self) -> None:
        """A notebook that :meth:`take` handed out is graded: its worker is free."""
        with self._changed:
            self._grading -= 1
            self._changed.notify_all()

    def _room(self) -> bool:
        """Whether a notebook may start: the solutions being timed hold workers too."""
        return self._grading < self._workers - self._ready.count(False)

    def _best(self) -> int | None:
        """The ready class with students left that goes first, if any."""
        waiting = [i for i, left in enumerate(self._left) if self._ready[i] and left]
        known = [i for i in waiting if self._cost[i] is not None]
        if known:
            return max(known, key=lambda i: (self._cost[i], -i))
        return waiting[0] if waiting else None

    def take(self, stop: threading.Event | None = None) -> tuple[int, str] | None:
        """The next (class index, student); waits for a class to be ready and for room.

        None once every student was handed out or *stop* is set (looked at
        twice a second while waiting). Each notebook taken is handed back
        with :meth:`done` once graded.
        """
        with self._changed:
            while True:
                if stop is not None and stop.is_set():
                    return None
                best = self._best()
                if best is not None and self._room():
                    self._grading += 1
                    return best, self._left[best].popleft()
                if not any(self._left):
                    return None
                self._changed.wait(timeout=0.5)
