"""The grading settings (:class:`Grader`) and one run's resolved values (:class:`Batch`).

Every setting of ``python -m grader autograde`` is a trait of :class:`Grader`,
a traitlets ``Configurable`` as nbgrader's own settings are: its default and
its help are written there once, the course's ``nbgrader_config.py`` sets it
as ``c.Grader.<name>``, and the command line (flags made from the traits'
``flag`` tags, :mod:`grader.run.autograde`) sets it over the file. The kernel's
limits take their defaults from :class:`grader.sandbox.policy.Policy`, which
plain ``nbgrader autograde`` uses as they are: one source for both.

:class:`Batch` is the record every module that grades reads
(:mod:`grader.run.batch`, :mod:`grader.run.one_student`,
:mod:`grader.run.setup_check`, :mod:`grader.run.slurm`), so it lives below all
of them: none imports another for its type. What it is not given, it takes
from the course's settings.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Enum, Int, List, TraitError, Unicode
from traitlets.config import Configurable

from grader.sandbox import isolation as sandbox

if TYPE_CHECKING:
    from traitlets.config import Config

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """Bytes from ``4G``, ``512M``, ``64K`` or a plain number (ValueError otherwise)."""
    try:
        if text[-1].isalpha():
            return int(float(text[:-1]) * _UNITS[text[-1].upper()])
        return int(text)
    except (IndexError, KeyError, ValueError):
        raise ValueError(f"not a size like 4G or 512M: {text!r}") from None


def size_label(size: int) -> str:
    """``4G`` for 4 GiB: the largest unit that divides *size*."""
    for unit in "GMK":
        if size and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


class Size(Int):
    """A number of bytes, also given as ``4G``, ``512M`` or ``64K`` (file and command line)."""

    info_text = "a number of bytes, or a size like 4G or 512M"

    def validate(self, obj: Any, value: Any) -> int:
        if isinstance(value, str):
            try:
                value = parse_size(value)
            except ValueError as error:
                raise TraitError(f"Grader.{self.name}: {error}") from None
        return super().validate(obj, value)

    def from_string(self, s: str) -> int:
        return parse_size(s)


#: The sandbox's own limits (what plain ``nbgrader autograde`` gets) are the defaults here.
_KERNEL = sandbox.Policy(level="")


class Grader(Configurable):
    """How ``python -m grader autograde`` grades: ``c.Grader.<name>``, or its flag.

    nbgrader itself ignores this section; only :mod:`grader` reads it.
    """

    workers = Int(1, min=1, help="notebooks graded at once").tag(config=True, flag="--workers")
    wall_seconds = Int(600, min=1, help="seconds per notebook, in all").tag(
        config=True, flag="--wall"
    )
    memory_bytes = Size(_KERNEL.memory_bytes, help="memory per notebook").tag(
        config=True, flag="--memory"
    )
    cpu_seconds = Int(_KERNEL.cpu_seconds, help="CPU seconds per notebook").tag(
        config=True, flag="--cpu"
    )
    processes = Int(_KERNEL.processes, help="processes/threads per notebook").tag(
        config=True, flag="--processes"
    )
    disk_bytes = Size(
        _KERNEL.disk_bytes, help="files a notebook may write (its folders, HOME and /tmp)"
    ).tag(config=True, flag="--disk")
    class_disk_bytes = Size(
        16 << 30, help="what one assignment's graded folders may hold in autograded/ together"
    ).tag(config=True, flag="--class-disk")
    threads = Int(
        0,
        min=0,
        help="threads per notebook for the numerical libraries; 0: this machine's cores "
        "shared out among the workers",
    ).tag(config=True, flag="--threads")
    level = Enum(
        ["", *sandbox.LEVEL_MEANING],
        default_value="",
        help="the sandbox's isolation level (python -m grader sandbox lists them); "
        "empty: the strongest this machine offers",
    ).tag(config=True, flag="--level", metavar="LEVEL")
    without_gpu = List(
        Unicode(),
        help="assignments graded with the GPUs hidden from the notebook (the course "
        "manifest's without_gpu)",
    ).tag(config=True)


#: The settings, in the order they are declared (and listed in ``--help``).
SETTINGS = tuple(name for name in vars(Grader) if name in Grader.class_traits(config=True))
#: Those one run takes as they are (``without_gpu`` becomes :attr:`Batch.gpu`).
RUN_SETTINGS = tuple(name for name in SETTINGS if name != "without_gpu")


def from_settings() -> Any:
    """A field of :class:`Batch` that, when not given, the course's :class:`Grader` fills."""
    return field(default=None)


@dataclass
class Batch:
    """The resolved settings of one grading run (one assignment's class)."""

    course: Path
    assignment: str
    work: Path
    workers: int = from_settings()
    wall_seconds: int = from_settings()
    memory_bytes: int = from_settings()
    cpu_seconds: int = from_settings()
    processes: int = from_settings()
    disk_bytes: int = from_settings()
    class_disk_bytes: int = from_settings()
    #: The isolation level; filled with the strongest here when the settings name none.
    level: str = from_settings()
    #: Threads per notebook; filled with the cores shared out when the settings say 0.
    threads: int = from_settings()
    #: Whether notebooks see the GPUs: unless the course's ``c.Grader.without_gpu`` lists
    #: the assignment.
    gpu: bool = from_settings()
    #: Per-cell limits measured on the solution (set by :func:`grader.run.batch.prepare`;
    #: see grader.integration.cell_budgets).
    cell_budgets: Path | None = None
    #: Why the class is not graded (the solution fails here: grader.run.setup_check); "": it is.
    refused: str = ""

    def __post_init__(self) -> None:
        self.course = self.course.resolve()
        self.work = self.work.resolve()
        given = {name: getattr(self, name) for name in RUN_SETTINGS}
        if self.gpu is None or None in given.values():
            given = {name: value for name, value in given.items() if value is not None}
            settings = course_settings(self.course, **given)
            for name in RUN_SETTINGS:
                setattr(self, name, getattr(settings, name))
            if self.gpu is None:
                self.gpu = self.assignment not in settings.without_gpu
        self.level = self.level or sandbox.detect_level()
        self.threads = self.threads or max(1, len(os.sched_getaffinity(0)) // self.workers)


def course_config(course: Path) -> Config:
    """The course's ``nbgrader_config.py``, as nbgrader reads it (none: all defaults)."""
    from traitlets.config import Config
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    try:
        return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    except ConfigFileNotFound:
        return Config()


def course_settings(course: Path, **given: Any) -> Grader:
    """The course's grading settings: *given* (the command line's) over ``c.Grader.*`` of
    its config, over the defaults."""
    return Grader(config=course_config(course), **given)


@functools.cache  # read once per run, not once per merged student
def course_id(course: Path) -> str:
    return course_config(course).CourseDirectory.get("course_id", "default_course")
