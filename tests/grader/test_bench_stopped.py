"""``python -m grader bench`` stopped before its end writes what it graded and leaves nothing.

A class of looping notebooks (each held to its cell limit, so always in flight
for a while) is benchmarked in a subprocess, as an instructor runs it under an
outer time limit: once its first notebooks are being graded it gets SIGTERM,
as ``timeout`` sends. It must write its JSON marked incomplete, with the counts,
and no process of the run may remain: the notebooks in flight are ended with
their sandboxes. A run whose ``--deadline`` passes before grading begins starts
nothing and says so. Real nbgrader and sandbox, small settings (simt, two
workers, four students), as tests/grader/test_batch.py uses.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader.trials.selftest import nbgrader_env
from helpers import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture
def folder():
    """A folder the sandbox user may pass through (pytest's are private), the bench's TMPDIR.

    Short: the kernels' sockets are files in it, and a socket's path has a 107-byte limit.
    """
    path = Path(tempfile.mkdtemp(prefix="gb", dir="/var/tmp"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _bench(folder: Path, *extra: str) -> subprocess.Popen:
    args = ["bench", "--assignments", "simt", "--students", "4", "--workers", "2"]
    args += ["--serial-sample", "0", "--class-pattern", "looping", "--output", str(folder / "out")]
    return subprocess.Popen(
        [sys.executable, "-m", "grader", "--course", str(ROOT), *args, *extra],
        cwd=ROOT,
        env={**nbgrader_env(), "TMPDIR": str(folder)},  # every process of the run names it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _processes_naming(folder: Path) -> list[str]:
    """Processes (any user's: the sandboxes' too) whose environment or command names *folder*."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            seen = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
            if str(folder).encode() in seen:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            pass
    return found


def _result(folder: Path, proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err[-3000:]  # 1: stopped before its end
    [path] = (folder / "out").glob("*.json")
    assert path.name.endswith("-incomplete.json") and out.strip().endswith(path.name), out
    assert "notebooks graded" in err, err[-2000:]
    return json.loads(path.read_text())


def test_sigterm_ends_the_notebooks_in_flight_and_writes_what_was_graded(folder: Path) -> None:
    proc = _bench(folder, "--deadline", "400")  # the deadline is the safety net here
    started = time.monotonic()
    while not list(folder.glob("grader-bench-*/simt/course/grading/*/box/runtime")):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() - started < 300, "no notebook was being graded after 300 s"
        time.sleep(0.5)
    time.sleep(3)  # the looping cell runs (at least 10 s before its cell limit stops it)
    assert _processes_naming(folder), "the check below would see the run's processes"
    proc.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    result = _result(folder, proc)
    assert time.monotonic() - stopped < 90, "the stop took too long"
    assert result["complete"] is False and result["stopped_by"] == "SIGTERM"
    # both workers' notebooks were in flight: ended, not counted; the other two never started
    assert (result["graded_notebooks"], result["total_notebooks"]) == (0, 4)
    assert result["assignments"]["simt"]["by_kind"] == {}
    assert result["wall_seconds"] >= result["stopped_at_seconds"] > 0
    deadline = time.monotonic() + 15  # the forkserver ends when it sees the bench gone
    while _processes_naming(folder) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _processes_naming(folder) == []
    assert not list(folder.glob("grader-bench-*")), "the bench's folder was left behind"


def test_a_deadline_before_grading_starts_nothing_and_says_so(folder: Path) -> None:
    result = _result(folder, _bench(folder, "--deadline", "0"))
    assert result["complete"] is False and result["stopped_by"] == "deadline"
    assert (result["graded_notebooks"], result["total_notebooks"]) == (0, 4)
    assert result["assignments"]["simt"]["by_kind"] == {}
    assert _processes_naming(folder) == []
