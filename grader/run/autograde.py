"""``python -m grader autograde``: grade the classes of one or more assignments, print the table.

The limits per notebook are the fields of :class:`grader.run.batch.Batch` declared
with :func:`grader.run.batch.option`: the command line takes them with the
defaults written there, and nowhere else. ``task`` is one Slurm array task of
``autograde --slurm`` (:mod:`grader.run.slurm`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import fields
from pathlib import Path

from grader.intake.submissions import chosen_students
from grader.run.batch import Batch, run_classes, table
from grader.run.grade_record import stale_students
from grader.run.run_lock import assignment_lock
from grader.run.stopping import EXIT_STATUS, stopping
from grader.sandbox import isolation as sandbox

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes from ``4G``, ``512M``, ``64K`` or a plain number."""
    try:
        if text[-1].isalpha():
            return int(float(text[:-1]) * _UNITS[text[-1].upper()])
        return int(text)
    except (IndexError, KeyError, ValueError):
        raise argparse.ArgumentTypeError(f"not a size like 4G or 512M: {text!r}") from None


def size_label(size: int) -> str:
    """``4G`` for 4 GiB: the largest unit that divides *size*."""
    for unit in "GMK":
        if size and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


def _limit_fields() -> list:
    return [f for f in fields(Batch) if "flag" in f.metadata]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Grade every student of one or more assignments in the sandbox; several assignments "
        "share one pool of workers, so the run ends when the last notebook does."
    )
    parser.add_argument("assignment", nargs="+")
    parser.add_argument("--student", help="comma-separated ids (default: all)")
    parser.add_argument(
        "--only-stale",
        action="store_true",
        help="only students whose grade is stale, missing or failed (see: python -m grader status)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="grading folder (default: <course>/grading/<assignment>; with several "
        "assignments, <work>/<assignment>)",
    )
    for limit in _limit_fields():
        size = limit.metadata["size"]
        shown = size_label(limit.default) if size else limit.default
        parser.add_argument(
            limit.metadata["flag"],
            dest=limit.name,
            type=parse_size if size else int,
            default=limit.default,
            metavar="SIZE" if size else "N",
            help=f"{limit.metadata['help']} ({shown})",
        )
    parser.add_argument(
        "--slurm", action="store_true", help="one Slurm array task per student, then merge here"
    )
    parser.add_argument(
        "--sbatch-option",
        action="append",
        default=[],
        help="extra sbatch option, e.g. --sbatch-option=--partition=cpu",
    )


def main(course: Path, args: argparse.Namespace) -> int:
    """Grade, print one table per assignment; the exit status says how it ended.

    0: every student graded; 1: some not (the command that grades them again is
    printed), or another run holds an assignment (:mod:`grader.run.run_lock`);
    130 / 143: stopped by SIGINT (Ctrl-C) / SIGTERM, after the notebooks in
    flight were ended and the finished ones merged and listed.
    """
    assignments = list(dict.fromkeys(args.assignment))
    with contextlib.ExitStack() as locks:
        for assignment in assignments:  # before anything is touched: the other run's folders
            locks.enter_context(assignment_lock(course, assignment))
        return _grade(course, args, assignments)


def students_to_grade(
    course: Path, assignment: str, named: str | None, only_stale: bool
) -> list[str]:
    """The students named (default: all who handed in); with *only_stale*, only those
    whose grade is stale, missing or failed (:mod:`grader.run.grade_record`)."""
    students = chosen_students(course, assignment, named)
    if only_stale:
        stale = set(stale_students(course, assignment))
        students = [s for s in students if s in stale]
    return students


def _grade(course: Path, args: argparse.Namespace, assignments: list[str]) -> int:
    classes = []
    limits = {limit.name: getattr(args, limit.name) for limit in _limit_fields()}
    for assignment in assignments:
        students = students_to_grade(course, assignment, args.student, args.only_stale)
        if args.only_stale and not students:
            print(f"{assignment}: every grade is current", file=sys.stderr)
            continue
        if not students:
            return 1
        if args.work is None:
            work = course / "grading" / assignment
        else:
            work = args.work / assignment if len(assignments) > 1 else args.work
        classes.append((Batch(course, assignment, work.resolve(), **limits), students))
    if not classes:
        return 0
    level = classes[0][0].level
    print(f"grading sandbox: {level}: {sandbox.LEVEL_MEANING[level]}", file=sys.stderr)
    for warning in sandbox.environment_warnings():
        print(f"warning: {warning}", file=sys.stderr)
    if args.slurm:  # the cluster runs the tasks; a stop cancels the array (grader.run.slurm)
        from grader.run.slurm import run_slurm

        then = "cancelling the Slurm array, then merging what finished"
        with stopping(speaker="grader", then=then) as stop:
            results = [
                run_slurm(run, students, args.sbatch_option, stop=stop) for run, students in classes
            ]
    else:
        with stopping(speaker="grader", then="merging what finished") as stop:
            results = run_classes(classes, stop=stop)
    failed_any = False
    for (run, students), outcomes in zip(classes, results):
        if len(classes) > 1:
            print(f"\n{run.assignment}")
        print(table(outcomes))
        if run.refused:
            print(f"grader: {run.assignment} not graded: {run.refused}", file=sys.stderr)
        finished = {o.student for o in outcomes}
        failed = [o.student for o in outcomes if o.status == "failed"]
        failed += [s for s in students if s not in finished]  # stopped or never started
        if failed:
            failed_any = True
            print(
                f"\n{len(failed)} not graded; grade them again with:\n  python -m grader "
                f"autograde {run.assignment} --student {','.join(failed)}"
            )
    if stop.is_set():
        print(f"grader: stopped by {stop.reason}", file=sys.stderr)
        return EXIT_STATUS.get(stop.reason, 1)
    return 1 if failed_any else 0


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("batch_file", type=Path)
    parser.add_argument("index", type=int)


def task(course: Path | None, args: argparse.Namespace) -> int:
    """One Slurm array task (its settings are in the batch file, not in a course folder)."""
    from grader.run.slurm import task as run_task

    run_task(args.batch_file, args.index)
    return 0
