"""The settings of one grading run (:class:`Batch`) and the course's own (its nbgrader_config.py).

A record read by every module that grades (:mod:`grader.run.batch`,
:mod:`grader.run.one_student`, :mod:`grader.run.setup_check`,
:mod:`grader.run.slurm`), so it lives below all of them: none imports another
for its type. The limits per notebook are fields declared with :func:`option`,
which ``python -m grader autograde`` turns into its flags.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.sandbox import isolation as sandbox

if TYPE_CHECKING:
    from traitlets.config import Config


def option(flag: str, help: str, default: int, *, size: bool = False) -> Any:
    """A setting that ``python -m grader autograde`` takes as *flag* (:mod:`grader.run.autograde`).

    The field's default is the command's default: it is written here only.
    *size*: given as ``4G``, ``512M`` and shown so in ``--help``.
    """
    return field(default=default, metadata={"flag": flag, "help": help, "size": size})


#: The sandbox's own limits (what plain ``nbgrader autograde`` gets) are autograde's defaults.
_KERNEL = sandbox.Policy(level="")


@dataclass
class Batch:
    """Settings for one grading run."""

    course: Path
    assignment: str
    work: Path
    workers: int = option("--workers", "notebooks graded at once", 1)
    wall_seconds: int = option("--wall", "seconds per notebook", 600)
    memory_bytes: int = option("--memory", "memory per notebook", _KERNEL.memory_bytes, size=True)
    cpu_seconds: int = option("--cpu", "CPU seconds per notebook", _KERNEL.cpu_seconds)
    processes: int = option("--processes", "processes/threads per notebook", _KERNEL.processes)
    disk_bytes: int = option("--disk", "files a notebook may write", _KERNEL.disk_bytes, size=True)
    class_disk_bytes: int = option(
        "--class-disk",
        "what one assignment's graded folders may hold in autograded/ together",
        16 << 30,
        size=True,
    )
    level: str = ""
    #: Threads per notebook for the numerical libraries; 0: this machine's cores
    #: shared out among the workers.
    threads: int = 0
    #: Whether notebooks see the GPUs; None: yes, unless the course's
    #: ``c.Grader.without_gpu`` lists the assignment.
    gpu: bool | None = None
    #: Per-cell limits measured on the solution (set by :func:`grader.run.batch.prepare`;
    #: see grader.integration.cell_budgets).
    cell_budgets: Path | None = None
    #: Why the class is not graded (the solution fails here: grader.run.setup_check); "": it is.
    refused: str = ""

    def __post_init__(self) -> None:
        self.course = self.course.resolve()
        self.work = self.work.resolve()
        self.level = self.level or sandbox.detect_level()
        self.threads = self.threads or max(1, len(os.sched_getaffinity(0)) // self.workers)
        if self.gpu is None:
            self.gpu = self.assignment not in course_setting(self.course, "without_gpu", [])


def course_config(course: Path) -> Config:
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()


@functools.cache  # read once per run, not once per merged student
def course_id(course: Path) -> str:
    return course_config(course).CourseDirectory.get("course_id", "default_course")


def course_setting(course: Path, name: str, default: object) -> object:
    """A grading setting of the course, ``c.Grader.<name>`` in its nbgrader_config.py.

    nbgrader itself ignores the ``Grader`` section; only this package reads it.
    """
    return course_config(course).Grader.get(name, default)
