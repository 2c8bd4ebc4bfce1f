"""Stopping a long grading benchmark early, so that it still reports what it graded.

A benchmark of a whole class runs for minutes, often under an outer time limit
(``timeout``, a batch scheduler) that ends it with SIGTERM. Killed outright, it
would leave nothing, and the notebooks in flight would keep their sandboxes. So
``python -m grader bench`` runs inside :func:`stopping`: SIGTERM, SIGINT or its
own deadline only set a :class:`Stop` event; :func:`grader.run.batch.run_classes`
then starts no more notebooks, ends and cleans up those in flight, and hands
back the finished ones, which the benchmark writes as a partial result.

``python -m grader autograde`` runs inside it too (with *speaker*
``grader``): a Ctrl-C or SIGTERM there stops new notebooks, ends those in
flight, merges the finished ones and prints the table and the command that
grades the rest (:mod:`grader.run.autograde`, exit status 130 or 143).
The handlers are installed for the run only; the previous ones are put back
afterwards. Before the run begins and after it ends (the imports, which take
seconds, reading the course, printing the table), :func:`stop_at_once` ends
the command on SIGINT or SIGTERM with one line and the same exit status,
rather than a ``KeyboardInterrupt`` traceback or a silent death.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

#: The signals that stop a benchmark (an outer ``timeout`` sends the first).
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stop(threading.Event):
    """An event that also says why and when it was first set."""

    def __init__(self) -> None:
        super().__init__()
        self.reason = ""
        self.at: float | None = None  # time.monotonic() when it was first set

    def request(self, reason: str) -> None:
        """Set the event, keeping the first reason and instant."""
        if not self.is_set():
            self.reason, self.at = reason, time.monotonic()
            self.set()


#: The exit status of a run stopped by each signal (the shell's 128 + signal number).
EXIT_STATUS = {"SIGINT": 128 + signal.SIGINT, "SIGTERM": 128 + signal.SIGTERM}


def _say(speaker: str, text: str) -> None:
    # os.write, not print: a signal handler may run while the main thread is inside print
    os.write(2, f"\n{speaker}: {text}\n".encode())


@contextlib.contextmanager
def stopping(
    deadline: float | None = None, speaker: str = "grader bench", then: str = "writing"
) -> Iterator[Stop]:
    """A :class:`Stop` set by SIGTERM, SIGINT or after *deadline* seconds, for the block.

    The previous handlers are restored and the deadline's timer cancelled when
    the block ends, however it ends.
    """
    stop = Stop()

    def on_signal(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if not stop.is_set():
            _say(speaker, f"{name}: no more notebooks start; ending those in flight, then {then}")
        stop.request(name)

    def on_deadline() -> None:
        _say(
            speaker,
            f"the deadline of {deadline:g} s passed: ending the notebooks in flight, then {then}",
        )
        stop.request("deadline")

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    timer = None
    try:
        for sig in SIGNALS:
            signal.signal(sig, on_signal)
        if deadline is not None:
            timer = threading.Timer(max(0.0, deadline), on_deadline)
            timer.daemon = True
            timer.start()
        yield stop
    finally:
        if timer is not None:
            timer.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Stopped(SystemExit):
    """The command was stopped outside a run (:func:`stop_at_once`); its code is the exit status."""


def stop_at_once(speaker: str) -> None:
    """From now on, SIGINT or SIGTERM ends the command with one line and 130 or 143.

    For the stretch outside :func:`stopping`, where no run has anything to
    end or merge: raising :class:`Stopped` (a ``SystemExit``) still runs the
    ``finally`` blocks and context managers on the way out, so a lock taken or
    a child process started is let go.
    """

    def on_signal(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        _say(speaker, f"stopped by {name}")
        raise Stopped(EXIT_STATUS[name])

    for sig in SIGNALS:
        signal.signal(sig, on_signal)
