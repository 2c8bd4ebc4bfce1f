"""``python -m grader autograde``: grade the classes of one or more assignments, print the table.

Its flags are the settings of :class:`grader.run.settings.Grader` (their defaults and
help are written there, and nowhere else): a flag given wins over the course's
``c.Grader.<name>``, and what no flag gives comes from there. ``task`` is one Slurm array task of
``autograde --slurm`` (:mod:`grader.run.slurm`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traitlets import TraitError

from grader.intake.submissions import chosen_students
from grader.run.batch import Batch, run_classes, table
from grader.run.grade_record import stale_students
from grader.run.run_lock import assignment_lock
from grader.run.settings import SETTINGS, Grader, Size, size_label
from grader.run.stopping import EXIT_STATUS, stopping
from grader.sandbox import isolation as sandbox


def _reader(name: str) -> Callable[[str], Any]:
    """The argparse type of setting *name*: its trait's parsing and checks (sizes like 4G)."""
    trait = Grader.class_traits()[name]

    def read(text: str) -> Any:
        try:
            return getattr(Grader(**{name: trait.from_string(text)}), name)
        except (TraitError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting of :class:`Grader` tagged with one; given, it wins over the
    course's ``c.Grader.<name>``, so an absent flag leaves no value (the file's stands)."""
    for name in SETTINGS:
        trait = Grader.class_traits()[name]
        flag = trait.metadata.get("flag")
        if flag is None:
            continue
        size = isinstance(trait, Size)
        default = size_label(trait.default_value) if size else trait.default_value
        parser.add_argument(
            flag,
            dest=name,
            type=_reader(name),
            default=argparse.SUPPRESS,
            metavar=trait.metadata.get("metavar", "SIZE" if size else "N"),
            help=f"{trait.help} ({default})" if default != "" else trait.help,
        )


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
    add_setting_flags(parser)
    parser.epilog = (
        "A setting's flag wins over c.Grader.<name> in the course's nbgrader_config.py; the "
        "defaults shown are what neither sets."
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
    given = {name: getattr(args, name) for name in SETTINGS if hasattr(args, name)}
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
        classes.append((Batch(course, assignment, work.resolve(), **given), students))
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
