"""Who handed in what: the students with a submission of an assignment in ``submitted/``."""

from __future__ import annotations

import sys
from pathlib import Path


def students_of(course: Path, assignment: str) -> list[str]:
    """Every student with a submission of *assignment*, sorted."""
    submitted = course / "submitted"
    return (
        sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())
        if submitted.is_dir()
        else []
    )


def chosen_students(course: Path, assignment: str, named: str | None) -> list[str]:
    """The students named (comma-separated), or every one with a submission; says when none."""
    students = named.split(",") if named else students_of(course, assignment)
    if not students:
        print(f"no submissions of {assignment} in {course / 'submitted'}", file=sys.stderr)
    return students
