"""A chapter and an assignment added through the manifest reach every list that names chapters.

Why: before the manifest, a new chapter touched about ten places (checks registry, command
table, import layers, README's table, the student edition, tests), found one test failure at a
time. Here a throw-away chapter "07" with a check, a benchmark command and an assignment is
added to a copy of the repository by writing only the manifest entry and the chapter's own
files (notebook, check module, model answer, command module, assignment notebooks); the
checks registry, ``python -m demos``, README's rendered table (which differs from its
rendering, so that ``tools/docs/render.py --check`` fails, until it is re-rendered) and the
student edition all show it, each run as its own program in the copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from demos import manifest
from helpers import ROOT, instructor_tools

pytestmark = instructor_tools

# What the programs below read: the package, the chapters, the released and source
# assignments, the tools, the docs pages and the results the docs quote.
COPIED = ("demos", "course", "exercises", "solutions", "tools", "docs", "grader/results")

CHAPTER = """
[assignments.throwaway]
notebook = "throwaway.ipynb"
without_gpu = true

[[chapters]]
id = "07"
notebook = "07-throwaway.ipynb"
title = "A throw-away chapter"
minutes = 60
before = ["06", "patience"]
learn = "that one entry is enough"
packages = ["throwaway"]
assignment = "throwaway"
results = []

[chapters.checks]
double = "demos.checks.throwaway_checks:double"

[[chapters.commands]]
words = ["bench", "throwaway"]
module = "demos.throwaway.bench"
help = "chapter 7: prints that it ran"
"""
CHECK = '''"""Checks of the throw-away chapter."""

from demos.checks._harness import CheckFailed


def double(student):
    if student(21) != 42:
        raise CheckFailed("double(21) should be 42")
    return "doubles"
'''
ANSWER = 'def double(x):\n    """Twice x."""\n    return 2 * x\n'
BENCH = '''"""A benchmark that only says it ran."""


def add_arguments(parser):
    parser.add_argument("--times", type=int, default=1)


def main(args):
    print("throw-away bench ran", args.times)
    return 0
'''


def _notebook(text: str) -> str:
    cell = {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": text}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1) + "\n"


def _copy_of_the_course(root: Path) -> None:
    skip = shutil.ignore_patterns("__pycache__", "_build", ".ipynb_checkpoints")
    for rel in COPIED:
        shutil.copytree(ROOT / rel, root / rel, ignore=skip)


def _add_the_chapter(root: Path) -> None:
    """Only the manifest's entry and the chapter's own files."""
    with (root / "demos" / "course.toml").open("a", encoding="utf-8") as manifest:
        manifest.write(CHAPTER)
    files = {
        "course/07-throwaway.ipynb": _notebook("# 7. A throw-away chapter"),
        "demos/checks/throwaway_checks.py": CHECK,
        "demos/checks/answers/double.py": ANSWER,
        "demos/throwaway/__init__.py": '"""The throw-away chapter\'s code."""\n',
        "demos/throwaway/bench.py": BENCH,
        "solutions/throwaway/throwaway.ipynb": _notebook("# Throw-away, with answers"),
        "exercises/throwaway/throwaway.ipynb": _notebook("# Throw-away, released"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


# README's rendered blocks, as `tools/docs/render.py` makes them, without the benchmarks
# page (which the results decide, not the manifest): "diff" prints how the committed
# README differs from its rendering, "write" writes the rendering.
BLOCKS = """
import sys
sys.path.insert(0, "tools/docs")
import render
pages = render.rendered_blocks(render.ROOT, render.environment(render.Results(render.ROOT)))
if sys.argv[1] == "diff":
    print(render.differences(pages))
else:
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
"""


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    """A program of the copy, its ``demos`` the copy's own."""
    env = {**os.environ, "PYTHONPATH": str(root), "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course-copy")
    _copy_of_the_course(root)
    rendered = _run(root, "-c", BLOCKS, "diff")
    assert rendered.stdout.strip() == "", "README is not rendered to start with: " + rendered.stdout
    _add_the_chapter(root)
    return root


def test_the_check_joins_the_registry_under_its_chapter(course: Path) -> None:
    code = (
        "import demos; from demos.checks import CHECKS, passes\n"
        f"assert demos.__file__.startswith({str(course)!r}), demos.__file__\n"
        "print(CHECKS['double'][0], passes('double', lambda x: x + x), passes('double', abs))"
    )
    done = _run(course, "-c", code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "07 True False", done.stdout


def test_the_command_joins_the_command_line(course: Path) -> None:
    usage = _run(course, "-m", "demos")
    assert "bench throwaway" in usage.stdout and "chapter 7: prints that it ran" in usage.stdout
    done = _run(course, "-m", "demos", "bench", "throwaway", "--times", "3")
    assert done.returncode == 0 and "throw-away bench ran 3" in done.stdout, done.stderr[-3000:]


def test_the_readme_table_is_out_of_date_until_rendered(course: Path) -> None:
    row = (
        "| 7 | [A throw-away chapter](07-throwaway.ipynb) | that one entry is enough | 60 min "
        "| 6, patience | [`throwaway`](../exercises/throwaway/throwaway.ipynb) |"
    )
    # the course's total with the new chapter's hour, from the copy's manifest (not a copy of
    # it), rounded half up as the template's Jinja round does
    hours = int(manifest.load(course / "demos" / "course.toml").minutes / 60 + 0.5)
    stale = _run(course, "-c", BLOCKS, "diff")
    total = f"+Total: about {hours} hours"
    assert f"+{row}" in stale.stdout and total in stale.stdout, stale.stderr
    assert _run(course, "-c", BLOCKS, "write").returncode == 0
    assert row in (course / "course" / "README.md").read_text(encoding="utf-8")
    assert _run(course, "-c", BLOCKS, "diff").stdout.strip() == ""


def test_the_student_edition_ships_the_chapter_and_the_assignment(course: Path) -> None:
    dest = course.parent / f"{course.name}-edition"
    done = _run(course, "tools/build_student_edition.py", str(dest))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (dest / "course" / "07-throwaway.ipynb").is_file()
    assert (dest / "exercises" / "throwaway" / "throwaway.ipynb").is_file()
    assert not (dest / "solutions").exists()


def test_the_edition_refuses_an_assignment_that_was_never_released(course: Path) -> None:
    released = course / "exercises" / "throwaway"
    shutil.move(released, course / "held-back")
    try:
        done = _run(course, "tools/build_student_edition.py", str(course.parent / "unreleased"))
    finally:
        shutil.move(course / "held-back", released)
    assert done.returncode == 1
    assert "throwaway" in done.stderr and "generate_assignment" in done.stderr, done.stderr
