"""``python -m grader autograde``: grade the classes of one or more assignments, print the table.

The limits per notebook are the fields of :class:`grader.batch.Batch` declared
with :func:`grader.batch.option`: the command line takes them with the
defaults written there, and nowhere else. ``task`` is one Slurm array task of
``autograde --slurm`` (:mod:`grader.slurm`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from grader import sandbox
from grader.batch import Batch, chosen_students, run_classes, table

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
    """Grade, print one table per assignment; exit 1 when a student was not graded."""
    classes = []
    assignments = list(dict.fromkeys(args.assignment))
    limits = {limit.name: getattr(args, limit.name) for limit in _limit_fields()}
    for assignment in assignments:
        students = chosen_students(course, assignment, args.student)
        if not students:
            return 1
        if args.work is None:
            work = course / "grading" / assignment
        else:
            work = args.work / assignment if len(assignments) > 1 else args.work
        classes.append((Batch(course, assignment, work.resolve(), **limits), students))
    level = classes[0][0].level
    print(f"grading sandbox: {level}: {sandbox.LEVEL_MEANING[level]}", file=sys.stderr)
    for warning in sandbox.environment_warnings():
        print(f"warning: {warning}", file=sys.stderr)
    if args.slurm:
        from grader.slurm import run_slurm

        results = [run_slurm(run, students, args.sbatch_option) for run, students in classes]
    else:
        results = run_classes(classes)
    failed_any = False
    for (run, _), outcomes in zip(classes, results):
        if len(classes) > 1:
            print(f"\n{run.assignment}")
        print(table(outcomes))
        failed = [o.student for o in outcomes if o.status == "failed"]
        if failed:
            failed_any = True
            print(
                f"\n{len(failed)} not graded; grade them again with:\n  python -m grader "
                f"autograde {run.assignment} --student {','.join(failed)}"
            )
    return 1 if failed_any else 0


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("batch_file", type=Path)
    parser.add_argument("index", type=int)


def task(course: Path | None, args: argparse.Namespace) -> int:
    """One Slurm array task (its settings are in the batch file, not in a course folder)."""
    from grader.slurm import task as run_task

    run_task(args.batch_file, args.index)
    return 0
