"""What each grade was given for: the submitted notebooks' sha256, kept per assignment.

A late upload that replaces ``submitted/<student>/<assignment>/`` after the
student was graded leaves the old grade in the gradebook, and nothing there
says which version it belongs to. So every grading run records, per student,
the sha256 of each notebook it graded (taken from the copy it graded), the
status and the score, in ``<course>/grading/<assignment>.grades.json``;
``python -m grader status <assignment>`` compares them with what is submitted
now and lists the grades that are stale, missing or failed, and
``autograde --only-stale`` grades just those students.

Files are written whole or not at all (:func:`write_json`): a full disk must
not leave half a record that reads as none.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from grader.intake.submissions import students_of

__all__ = [
    "notebook_digests",
    "record_path",
    "stale_students",
    "update_record",
    "write_json",
    "write_results",
]


def write_json(path: Path, data: Any) -> None:
    """Write *data* as JSON to *path* atomically (a temporary file, then ``os.replace``)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def notebook_digests(folder: Path) -> dict[str, str]:
    """The sha256 of each notebook under *folder* (a student's submission), by relative path."""
    if not folder.is_dir():
        return {}
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*.ipynb"))
        if path.is_file() and not path.is_symlink() and ".ipynb_checkpoints" not in path.parts
    }


def record_path(course: Path, assignment: str) -> Path:
    """The per-assignment record of what each grade was given for."""
    return course / "grading" / f"{assignment}.grades.json"


def load_record(course: Path, assignment: str) -> dict[str, dict]:
    """The record of *assignment* (student -> entry); empty if none was written."""
    try:
        return json.loads(record_path(course, assignment).read_text())
    except (OSError, ValueError):
        return {}


def update_record(course: Path, assignment: str, outcomes: list[Any]) -> None:
    """Record the graded and failed *outcomes* of a run (others' entries stay as they were)."""
    record = load_record(course, assignment)
    now = time.strftime("%Y-%m-%d %H:%M:%S %z")
    for o in outcomes:
        if o.status in ("graded", "failed"):
            record[o.student] = {
                "status": o.status,
                "score": o.score,
                "max_score": o.max_score,
                "sha256": o.submitted_sha256,
                "at": now,
            }
    path = record_path(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)


def grade_states(course: Path, assignment: str) -> dict[str, str]:
    """Each submitting student's grade: ``current``, ``stale``, ``missing`` or ``failed``."""
    record = load_record(course, assignment)
    states = {}
    for student in students_of(course, assignment):
        entry = record.get(student)
        now = notebook_digests(course / "submitted" / student / assignment)
        if entry is None:
            states[student] = "missing"
        elif entry.get("status") != "graded":
            states[student] = "failed"
        elif entry.get("sha256") != now:
            states[student] = "stale"
        else:
            states[student] = "current"
    return states


def stale_students(course: Path, assignment: str) -> list[str]:
    """The students whose grade is not ``current`` (stale, missing or failed), sorted."""
    return sorted(s for s, state in grade_states(course, assignment).items() if state != "current")


def write_results(work: Path, course: Path, assignment: str, outcomes: list[Any]) -> None:
    """A run's ``summary.json`` and its entries in the grade record, each written whole.

    A failure (a full disk) is one line on stderr: the grades are merged
    already, and the table and the command that grades again must still come.
    """
    from dataclasses import asdict

    for what, write in (
        ("summary.json", lambda: write_json(work / "summary.json", [asdict(o) for o in outcomes])),
        ("the grade record", lambda: update_record(course, assignment, outcomes)),
    ):
        try:
            write()
        except OSError as error:
            print(f"grader: {assignment}: {what} not written: {error}", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "List each student's grade of an assignment as current, stale (the submission changed "
        "since it was graded), missing or failed; exit 1 if any is not current."
    )
    parser.add_argument("assignment", nargs="+")


def main(course: Path, args: argparse.Namespace) -> int:
    """``python -m grader status``: one line per student whose grade is not current."""
    behind = False
    for assignment in dict.fromkeys(args.assignment):
        states = grade_states(course, assignment)
        counts = {s: list(states.values()).count(s) for s in ("current", "stale", "missing")}
        counts["failed"] = list(states.values()).count("failed")
        print(f"{assignment}: " + ", ".join(f"{n} {state}" for state, n in counts.items()))
        for student, state in sorted(states.items()):
            if state != "current":
                behind = True
                print(f"  {student}: {state}")
        late = [s for s, state in states.items() if state != "current"]
        if late:
            print(f"  grade them with: python -m grader autograde {assignment} --only-stale")
    return 1 if behind else 0
