"""``python -m grader``: collect, screen, autograde and benchmark a class (instructors only).

This module only reads the command line and hands it on: each subcommand's
arguments are declared next to its code (that module's ``add_arguments``), and
its ``main(course, args)`` does the work and gives the exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from grader.run.stopping import stop_at_once

if __name__ == "__main__":  # a Ctrl-C while the modules below load (seconds): one line
    stop_at_once("grader")

from grader.intake import commands as intake  # noqa: E402
from grader.intake import similarity  # noqa: E402
from grader.run import autograde, grade_record  # noqa: E402
from grader.sandbox import isolation as sandbox  # noqa: E402
from grader.trials import bench, selftest  # noqa: E402

Declare = Callable[[argparse.ArgumentParser], None]
Run = Callable[[Path, argparse.Namespace], int]

#: Each subcommand: its line in ``--help``, what declares its arguments, what runs it.
COMMANDS: dict[str, tuple[str, Declare | None, Run]] = {
    "collect": (
        "file downloaded submissions into submitted/",
        intake.add_collect_arguments,
        intake.collect,
    ),
    "screen": (
        "flag submissions for manual review before grading",
        intake.add_screen_arguments,
        intake.screen,
    ),
    "autograde": (
        "grade every student in the sandbox, in parallel",
        autograde.add_arguments,
        autograde.main,
    ),
    "status": (
        "list grades that are stale (resubmitted since), missing or failed",
        grade_record.add_arguments,
        grade_record.main,
    ),
    "similarity": (
        "pairs of students whose answers look copied; JSON out",
        similarity.add_arguments,
        similarity.main,
    ),
    "bench": ("time grading synthetic classes; JSON out", bench.add_arguments, bench.main),
    "sandbox": ("say what the grading sandbox can isolate on this machine", None, sandbox.main),
    "selftest": (
        "grade each solution and blank release with real nbgrader (full marks / none?)",
        selftest.add_arguments,
        selftest.main,
    ),
    # One Slurm array task of autograde --slurm: its settings come in a file, not a course.
    "task": (argparse.SUPPRESS, autograde.add_task_arguments, autograde.task),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--course",
        type=Path,
        default=Path.cwd(),
        help="the course folder (with nbgrader_config.py); default: here",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_line, declare, _) in COMMANDS.items():
        command = sub.add_parser(name, help=help_line)
        if declare is not None:
            declare(command)
    args = parser.parse_args(argv)
    course = args.course.resolve()
    if args.command != "task" and not (course / "nbgrader_config.py").is_file():
        parser.error(
            f"{course} has no nbgrader_config.py: run from the course folder or use --course"
        )
    return COMMANDS[args.command][2](course, args)


if __name__ == "__main__":
    sys.exit(main())
