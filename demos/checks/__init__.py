"""Immediate feedback for the "your turn" cells of the chapters.

A chapter cell asks the student to write a function or kernel; the next cell
runs ``check("name", what_they_wrote)``, which tries it on inputs chosen to
catch the usual mistakes and prints one line: a tick, or what went wrong
(which size, which index, which dtype, a write out of bounds). A check never
raises, so a notebook with unfinished cells still runs top to bottom.
``show_answer("name")`` prints the model answer, kept once, in
``demos/checks/answers/<name>.py``; the tests run every check against it.
A later cell that runs what the student wrote takes it through
``use_if_passed("name", what_they_wrote)``: the course's version until it passes.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from demos import manifest
from demos.checks._harness import run_check

ANSWERS_DIR = Path(__file__).resolve().parent / "answers"


class Registered(NamedTuple):
    """A check as the registry holds it: its chapter's id and the function."""

    chapter: str
    check: Callable[[Any], str]


def _function(entry: manifest.Check) -> Callable[[Any], str]:
    """The function ``module:function`` names; ImportError in one line if it names none."""
    module_name, _, function = entry.target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as error:
        raise ImportError(
            f"demos/course.toml: check {entry.name!r} names {entry.target}, "
            f"which cannot be imported ({error})"
        ) from error


# name -> (chapter, check), from the course manifest (demos/course.toml); the name is
# also the function's name in the notebook
CHECKS: dict[str, Registered] = {
    name: Registered(entry.chapter, _function(entry))
    for name, entry in manifest.course().checks.items()
}

__all__ = [
    "CHECKS",
    "answer_source",
    "check",
    "course_version",
    "passes",
    "show_answer",
    "use_if_passed",
]


def passes(name: str, student: Any) -> bool:
    """Try the student's *name* (a function or kernel), print one line of feedback, return
    success."""
    if name not in CHECKS:
        raise ValueError(f"no check named {name!r}; known: {', '.join(CHECKS)}")
    return run_check(name, lambda: CHECKS[name][1](student))


def check(name: str, student: Any) -> None:
    """Like :func:`passes`, for a notebook cell: prints the verdict and leaves nothing else on
    screen."""
    passes(name, student)


def answer_source(name: str) -> str:
    """The model answer for *name*, as source text."""
    path = ANSWERS_DIR / f"{name}.py"
    if name not in CHECKS or not path.exists():
        raise ValueError(f"no model answer named {name!r}; known: {', '.join(CHECKS)}")
    return path.read_text(encoding="utf-8")


def show_answer(name: str) -> None:
    """Print the model answer for *name*. Try first: the check tells you what to fix.

    An answer that calls a device function the course's kernels share (the warp's sum by
    shuffles) imports it with the comment ``# printed below the answer``; that module is printed
    after the answer, so that it reads as a whole answer.
    """
    source = answer_source(name)
    print(source)
    shown = r"^from (demos(?:\.\w+)+) import .*# printed below the answer$"
    for module in re.findall(shown, source, flags=re.MULTILINE):
        path = Path(importlib.import_module(module).__file__ or "")
        print(f"# --- {path.relative_to(ANSWERS_DIR.parents[2])}, imported above ---")
        print(path.read_text(encoding="utf-8"))


def course_version(name: str) -> Any:
    """The course's model answer for *name* (a function or kernel), compiled from its source."""
    namespace: dict[str, Any] = {}
    exec(compile(answer_source(name), f"<course answer {name}>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def use_if_passed(name: str, student: Any) -> Any:
    """The student's *name* when it passes its check, else the course's version, saying so.

    A later cell that runs what the student wrote (a kernel timed on the GPU, a
    model of a pipeline) would otherwise print a wrong figure without a word.
    """
    with contextlib.redirect_stdout(io.StringIO()):
        ok = passes(name, student)
    if ok:
        print(f"Using your {name} (it passed its check).")
        return student
    print(
        f"Your {name} has not passed its check yet, so this cell uses the course's version "
        f'(show_answer("{name}") prints it).'
    )
    return course_version(name)
