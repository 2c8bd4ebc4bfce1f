"""grader.run.stopping: SIGTERM, SIGINT and a deadline stop a benchmark, and only for its duration.

Also the benchmark's record of how far a run got (``complete``, the counts,
why it stopped) and its check of the class pattern: all without notebooks;
and ``python -m grader`` stopped while it starts (its imports take seconds):
one line and the signal's exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.run.one_student import Outcome
from grader.run.stopping import SIGNALS, Stop, stopping
from grader.trials.bench import _progress
from grader.trials.synthetic_class import class_pattern


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


def _loading_jsonschema(pid: int) -> bool:
    """Whether process *pid* has begun importing the grader's modules (nbformat's
    jsonschema, whose compiled part loads about half way through)."""
    try:
        return "rpds" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_grader_starts_ends_it_in_one_line(
    tmp_path: Path, sent: signal.Signals, status: int
) -> None:
    (tmp_path / "nbgrader_config.py").write_text("")
    grader = subprocess.Popen(
        [sys.executable, "-m", "grader", "--course", str(tmp_path), "autograde", "simt"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        end = time.monotonic() + 60
        while not _loading_jsonschema(grader.pid) and grader.poll() is None:
            assert time.monotonic() < end, "the grader never began its imports"
        loading = grader.poll() is None
        grader.send_signal(sent)
        out, err = grader.communicate(timeout=60)
    finally:
        grader.kill()
        grader.wait()
    assert loading, err
    assert grader.returncode == status, err
    assert err.strip() == f"grader: stopped by {sent.name}", err
    assert not out and not (tmp_path / "grading").exists()
