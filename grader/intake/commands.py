"""``python -m grader collect`` and ``screen``: file the submissions, then flag what needs a look.

The work is :func:`grader.intake.collect.collect_all` and
:func:`grader.intake.screen.screen_course`; here are their command lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.intake.submissions import chosen_students


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment")
    parser.add_argument("inputs", nargs="+", type=Path, help="folders, notebooks or zip files")
    parser.add_argument(
        "--keep",
        choices=["latest", "on-time"],
        default="latest",
        help="which of two notebooks of one student with one name to file: the latest "
        "(Canvas LATE or resubmission -1, -2, else the later input; default) or an on-time one",
    )


def collect(course: Path, args: argparse.Namespace) -> int:
    """File the inputs, print the report; exit 1 when something was refused."""
    from grader.intake.collect import collect_all

    report = collect_all(course, args.assignment, args.inputs, keep=args.keep)
    print(report.text())
    return 1 if report.refused else 0


def add_screen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment")
    parser.add_argument("--student", help="comma-separated ids (default: all)")


def screen(course: Path, args: argparse.Namespace) -> int:
    """One line per student: ``ok`` or the flags; changes nothing."""
    from grader.intake.screen import screen_course

    students = chosen_students(course, args.assignment, args.student)
    if not students:
        return 1
    flagged = 0
    for student, flags in screen_course(course, args.assignment, students).items():
        flagged += bool(flags)
        print(f"{student}: " + ("; ".join(flags) if flags else "ok"))
    print(f"{flagged} of {len(students)} submissions need a human look")
    return 0
