"""What keeps one grading run from spoiling grades: without notebooks, so quick.

The lock of an assignment's runs, sandbox user ids that still have
processes, the summary and grade record written whole (and a failure to write
them reported, not raised), a locked gradebook waited for, the record of
which submission each grade is for, and a cell timeout's message.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient.util import run_sync

from grader.integration import cell_budgets
from grader.run.grade_record import (
    grade_states,
    notebook_digests,
    stale_students,
    update_record,
    write_results,
)
from grader.run.gradebook_lock import GradebookLocked, while_locked
from grader.run.one_student import Outcome, failure_reason
from grader.run.run_lock import Busy, assignment_lock
from grader.sandbox import cgroups, processes
from helpers import ROOT


def test_a_second_run_of_an_assignment_is_refused_naming_the_first(tmp_path: Path) -> None:
    with assignment_lock(tmp_path, "simt"):
        with pytest.raises(Busy) as refused:
            with assignment_lock(tmp_path, "simt"):
                pass
        message = str(refused.value)
        assert f"pid {os.getpid()}" in message and "being graded by another run" in message
        assert "\n" not in message
        with assignment_lock(tmp_path, "cnn"):  # another assignment: no wait
            pass
    with assignment_lock(tmp_path, "simt"):  # freed when the run ends
        pass


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as a sandbox user")
def test_a_sandbox_uid_that_still_has_processes_is_not_claimed() -> None:
    with processes.claim_uids(1) as probe:
        first = probe[0]
    leftover = subprocess.Popen(["sleep", "60"], user=first)  # a killed run's orphan
    try:
        with processes.claim_uids(1) as uids:
            assert first not in uids
    finally:
        leftover.kill()
        leftover.wait()


def test_the_summary_and_record_are_written_whole_and_a_failure_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "grading" / "simt"
    work.mkdir(parents=True)
    outcome = Outcome("s01", "graded", 10, 10, submitted_sha256={"simt.ipynb": "ab"})
    write_results(work, tmp_path, "simt", [outcome])
    assert sorted(p.name for p in work.iterdir()) == ["summary.json"]  # no temporary left
    record = json.loads((tmp_path / "grading" / "simt.grades.json").read_text())
    assert record["s01"]["sha256"] == {"simt.ipynb": "ab"} and record["s01"]["score"] == 10
    missing = tmp_path / "no such folder"
    write_results(missing, tmp_path, "simt", [outcome])  # as on a full disk: reported
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "summary.json not written" in lines[0]


def _locked() -> Exception:
    from sqlalchemy.exc import OperationalError

    return OperationalError("UPDATE grade", {}, Exception("database is locked"))


def test_a_locked_gradebook_is_waited_for_then_reported_in_one_line() -> None:
    tries = []

    def write() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise _locked()
        return "merged"

    assert while_locked(write, wait=30) == "merged" and len(tries) == 3
    started = time.monotonic()
    with pytest.raises(GradebookLocked, match="stayed locked by another program for 1 s"):
        while_locked(lambda: (_ for _ in ()).throw(_locked()), wait=1)
    assert time.monotonic() - started < 5


def _hand_in(course: Path, student: str, text: str) -> Path:
    path = course / "submitted" / student / "simt" / "simt.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_grade_names_the_submission_it_graded_and_a_late_upload_makes_it_stale(
    tmp_path: Path,
) -> None:
    graded = [_hand_in(tmp_path, s, f"notebook of {s}") for s in ("s01", "s02", "s03")]
    _hand_in(tmp_path, "s04", "never graded")
    digests = [notebook_digests(p.parent) for p in graded]
    outcomes = [
        Outcome("s01", "graded", 10, 10, submitted_sha256=digests[0]),
        Outcome("s02", "graded", 6, 10, submitted_sha256=digests[1]),
        Outcome("s03", "failed", submitted_sha256=digests[2]),
    ]
    update_record(tmp_path, "simt", outcomes)
    graded[1].write_text("a late upload")
    assert grade_states(tmp_path, "simt") == {
        "s01": "current",
        "s02": "stale",
        "s03": "failed",
        "s04": "missing",
    }
    assert stale_students(tmp_path, "simt") == ["s02", "s03", "s04"]


def test_a_machinery_failure_is_the_notebooks_failure_reason() -> None:
    log = (
        "Traceback (most recent call last):\n"
        "DeadKernelError: Kernel died\n"
        "grader.integration.hidden_test_cells.GradingMachineryError: hidden tests of simt-launch "
        "not decided: "
        "the kernel stopped answering a hidden test (DeadKernelError)\n"
    )
    reason = failure_reason(log)
    assert reason.startswith("the grading machinery failed") and "simt-launch" in reason


def test_a_cell_cut_at_its_limit_says_so() -> None:
    from grader.integration.preprocessors import GuardedExecute

    execute = GuardedExecute()
    execute.km = SimpleNamespace(interrupt_kernel=lambda: None)
    reply = run_sync(execute._async_handle_timeout)(12, nbformat.v4.new_code_cell("x"))
    assert reply["content"]["evalue"].startswith("the cell did not finish in 12 s")
    assert reply["content"]["traceback"] == [f"CellTimeoutError: {reply['content']['evalue']}"]


def test_the_instructors_guide_states_the_per_cell_floor_the_code_uses() -> None:
    guide = (ROOT / "docs" / "instructors.md").read_text()
    assert f"max({cell_budgets.FLOOR_SECONDS} s, " in guide


@pytest.mark.skipif(not cgroups.available(), reason="no memory cgroups can be made here")
def test_a_cgroup_a_killed_run_left_is_removed_with_what_is_in_it() -> None:
    name = f"grader-left-{os.getpid()}"
    left = cgroups.create(name, 1 << 30)
    assert left is not None
    orphan = subprocess.Popen(["sleep", "60"])
    try:
        cgroups.join(str(left.path), orphan.pid)
        assert cgroups.remove_left_behind(name)
        assert orphan.wait(timeout=5) == -9 and not left.path.exists()
        assert not cgroups.remove_left_behind(name)
    finally:
        orphan.kill()
        left.remove()


def test_a_write_waits_for_a_real_sqlite_lock(tmp_path: Path) -> None:
    import sqlite3
    import threading

    from sqlalchemy import create_engine, text

    db = tmp_path / "gradebook.db"
    sqlite3.connect(db).execute("CREATE TABLE grade (score REAL)").connection.commit()
    holder = sqlite3.connect(db, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # another writer (the formgrader) holds the gradebook
    threading.Timer(2.0, holder.commit).start()
    engine = create_engine(f"sqlite:///{db}", connect_args={"timeout": 0.2})

    def write() -> None:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO grade VALUES (10)"))

    started = time.monotonic()
    while_locked(write, wait=30)
    assert time.monotonic() - started >= 1.5
    assert sqlite3.connect(db).execute("SELECT score FROM grade").fetchall() == [(10.0,)]


def test_only_stale_grades_just_the_grades_that_are_not_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from grader.run import autograde

    current = _hand_in(tmp_path, "s01", "graded and unchanged")
    late = _hand_in(tmp_path, "s02", "graded, then replaced")
    outcomes = [
        Outcome("s01", "graded", 10, 10, submitted_sha256=notebook_digests(current.parent)),
        Outcome("s02", "graded", 10, 10, submitted_sha256=notebook_digests(late.parent)),
    ]
    update_record(tmp_path, "simt", outcomes)
    parser = argparse.ArgumentParser()
    autograde.add_arguments(parser)
    args = parser.parse_args(["simt", "--only-stale"])
    assert autograde.main(tmp_path, args) == 0  # every grade current: nothing is started
    assert "simt: every grade is current" in capsys.readouterr().err
    late.write_text("a late upload")
    _hand_in(tmp_path, "s03", "never graded")
    assert autograde.students_to_grade(tmp_path, "simt", None, True) == ["s02", "s03"]
    assert autograde.students_to_grade(tmp_path, "simt", "s01,s02", True) == ["s02"]
    assert autograde.students_to_grade(tmp_path, "simt", None, False) == ["s01", "s02", "s03"]
