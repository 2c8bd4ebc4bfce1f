"""``python -m grader``: collect, check, autograde and benchmark a class (instructors only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader import sandbox


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].isalpha() else int(text)
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(f"not a size like 4G or 512M: {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    parser.add_argument(
        "--course",
        type=Path,
        default=Path.cwd(),
        help="the course folder (with nbgrader_config.py); default: here",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    collect = sub.add_parser("collect", help="file downloaded submissions into submitted/")
    collect.add_argument("assignment")
    collect.add_argument("inputs", nargs="+", type=Path, help="folders, notebooks or zip files")
    collect.add_argument(
        "--keep",
        choices=["latest", "on-time"],
        default="latest",
        help="which of two notebooks of one student with one name to file: the latest "
        "(Canvas LATE or resubmission -1, -2, else the later input; default) or an on-time one",
    )

    check = sub.add_parser("check", help="flag submissions for manual review before grading")
    check.add_argument("assignment")
    check.add_argument("--student", help="comma-separated ids (default: all)")

    grade = sub.add_parser(
        "autograde",
        help="grade every student in the sandbox, in parallel",
        description="Grade every student of one or more assignments in the sandbox; several "
        "assignments share one pool of workers, so the run ends when the last notebook does.",
    )
    grade.add_argument("assignment", nargs="+")
    grade.add_argument("--student", help="comma-separated ids (default: all)")
    grade.add_argument("--workers", type=int, default=1)
    grade.add_argument(
        "--work",
        type=Path,
        help="grading folder (default: <course>/grading/<assignment>; with several "
        "assignments, <work>/<assignment>)",
    )
    grade.add_argument("--wall", type=int, default=600, help="seconds per notebook (600)")
    grade.add_argument("--memory", type=_size, default=_size("4G"), help="per notebook (4G)")
    grade.add_argument("--cpu", type=int, default=600, help="CPU seconds per notebook (600)")
    grade.add_argument("--processes", type=int, default=512, help="processes/threads (512)")
    grade.add_argument(
        "--disk", type=_size, default=_size("1G"), help="files a notebook may write (1G)"
    )
    grade.add_argument(
        "--class-disk",
        type=_size,
        default=_size("16G"),
        help="what one assignment's graded folders may hold in autograded/ together (16G)",
    )
    grade.add_argument(
        "--slurm", action="store_true", help="one Slurm array task per student, then merge here"
    )
    grade.add_argument(
        "--sbatch-option",
        action="append",
        default=[],
        help="extra sbatch option, e.g. --sbatch-option=--partition=cpu",
    )

    bench = sub.add_parser("bench", help="time grading synthetic classes; JSON out")
    bench.add_argument("--students", type=int, default=6, help="per assignment")
    bench.add_argument("--assignments", default="simt")
    bench.add_argument("--workers", type=int, default=2)
    bench.add_argument(
        "--serial-sample",
        type=int,
        default=3,
        help="students graded by plain serial nbgrader autograde to compare",
    )
    bench.add_argument("--output", type=Path, default=Path("grader/results"))

    sub.add_parser("sandbox", help="say what the grading sandbox can isolate on this machine")
    from grader import selftest

    selftest.add_arguments(
        sub.add_parser(
            "selftest",
            help="grade each solution and blank release with real nbgrader (full marks / none?)",
        )
    )
    task = sub.add_parser("task", help=argparse.SUPPRESS)  # one Slurm array task
    task.add_argument("batch_file", type=Path)
    task.add_argument("index", type=int)
    args = parser.parse_args(argv)
    if args.command == "task":
        from grader.slurm import task as run_task

        run_task(args.batch_file, args.index)
        return 0
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").is_file():
        parser.error(
            f"{course} has no nbgrader_config.py: run from the course folder or use --course"
        )

    if args.command == "sandbox":
        from grader.cgroups import describe

        level = sandbox.detect_level()
        print(f"grading sandbox: {level}: {sandbox.LEVEL_MEANING[level]}")
        print(describe())
        print("a kernel can read:")
        for path in sandbox.visible_paths(level, private=[course]):
            print(f"  {path}")
        for warning in sandbox.environment_warnings():
            print(f"warning: {warning}")
        return 0
    if args.command == "selftest":
        return selftest.main(course, args)
    if args.command == "collect":
        from grader.collect import collect_all

        report = collect_all(course, args.assignment, args.inputs, keep=args.keep)
        print(report.text())
        return 1 if report.refused else 0
    if args.command == "bench":
        from grader.bench import bench as run_bench

        print(
            run_bench(
                course,
                args.assignments.split(","),
                args.students,
                args.workers,
                args.serial_sample,
                args.output.resolve(),
            )
        )
        return 0

    from grader import batch as batch_mod

    if args.command == "check":
        from grader.check import check_course

        students = _students(course, args.assignment, args.student)
        if not students:
            return 1
        flagged = 0
        for student, flags in check_course(course, args.assignment, students).items():
            flagged += bool(flags)
            print(f"{student}: " + ("; ".join(flags) if flags else "ok"))
        print(f"{flagged} of {len(students)} submissions need a human look")
        return 0
    classes = []
    assignments = list(dict.fromkeys(args.assignment))
    for assignment in assignments:
        students = _students(course, assignment, args.student)
        if not students:
            return 1
        if args.work is None:
            work = course / "grading" / assignment
        else:
            work = args.work / assignment if len(assignments) > 1 else args.work
        run = batch_mod.Batch(
            course,
            assignment,
            work.resolve(),
            args.workers,
            args.wall,
            args.memory,
            args.cpu,
            args.processes,
            args.disk,
            class_disk_bytes=args.class_disk,
        )
        classes.append((run, students))
    level = classes[0][0].level
    print(f"grading sandbox: {level}: {sandbox.LEVEL_MEANING[level]}", file=sys.stderr)
    for warning in sandbox.environment_warnings():
        print(f"warning: {warning}", file=sys.stderr)
    if args.slurm:
        from grader.slurm import run_slurm

        results = [run_slurm(run, students, args.sbatch_option) for run, students in classes]
    else:
        results = batch_mod.run_classes(classes)
    failed_any = False
    for (run, _), outcomes in zip(classes, results):
        if len(classes) > 1:
            print(f"\n{run.assignment}")
        print(batch_mod.table(outcomes))
        failed = [o.student for o in outcomes if o.status == "failed"]
        if failed:
            failed_any = True
            print(
                f"\n{len(failed)} not graded; grade them again with:\n  python -m grader "
                f"autograde {run.assignment} --student {','.join(failed)}"
            )
    return 1 if failed_any else 0


def _students(course: Path, assignment: str, named: str | None) -> list[str]:
    """The students named by --student, or every one with a submission (said when none)."""
    from grader.batch import students_of

    students = named.split(",") if named else students_of(course, assignment)
    if not students:
        print(f"no submissions of {assignment} in {course / 'submitted'}", file=sys.stderr)
    return students


if __name__ == "__main__":
    sys.exit(main())
