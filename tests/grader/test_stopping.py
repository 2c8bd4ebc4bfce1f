"""grader.stopping: SIGTERM, SIGINT and a deadline stop a benchmark, and only for its duration.

Also the benchmark's record of how far a run got (``complete``, the counts,
why it stopped) and its check of the class pattern: all without notebooks.
"""

from __future__ import annotations

import argparse
import os
import signal
import time

import pytest

from grader.bench import _progress
from grader.one_student import Outcome
from grader.stopping import SIGNALS, Stop, stopping
from grader.synthetic_class import class_pattern


def test_a_signal_sets_the_stop_instead_of_ending_the_process() -> None:
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    with stopping() as stop:
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5), "SIGTERM did not set the stop"
        os.kill(os.getpid(), signal.SIGINT)  # a second signal keeps the first reason
        time.sleep(0.1)
        assert stop.reason == "SIGTERM" and stop.at is not None
    assert {sig: signal.getsignal(sig) for sig in SIGNALS} == before


def test_the_previous_handlers_come_back_when_the_block_fails() -> None:
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(RuntimeError), stopping(deadline=60):
        raise RuntimeError("the benchmark failed")
    assert signal.getsignal(signal.SIGINT) is before


def test_a_deadline_sets_the_stop_when_it_passes() -> None:
    with stopping(deadline=0.2) as stop:
        assert not stop.is_set()
        assert stop.wait(5) and stop.reason == "deadline"
    with stopping(deadline=None) as stop:
        assert not stop.wait(0.3)


def test_a_run_says_how_far_it_got() -> None:
    graded = [[Outcome("a", "graded"), Outcome("b", "failed")], [Outcome("a", "graded")]]
    assert _progress(graded, 3, time.monotonic(), None) == {
        "complete": True,
        "graded_notebooks": 3,
        "total_notebooks": 3,
    }
    stop = Stop()
    started = time.monotonic()
    stop.request("deadline")
    stop.request("SIGTERM")  # the first reason stands
    made = _progress(graded, 40, started, stop)
    assert made["complete"] is False and made["stopped_by"] == "deadline"
    assert (made["graded_notebooks"], made["total_notebooks"]) == (3, 40)
    assert 0 <= made["stopped_at_seconds"] < 5


def test_the_class_pattern_names_known_kinds_only() -> None:
    assert class_pattern("looping,good") == ["looping", "good"]
    with pytest.raises(argparse.ArgumentTypeError, match="loopy"):
        class_pattern("loopy")
