"""The tree git sees: .gitignore hides data and caches, never code.

An unanchored pattern such as ``grading/`` matches a folder of that name at any
depth, so it once hid ``demos/grading/`` from ``git status`` and, since ruff skips
ignored paths, from the style check too. These tests ask git itself
(``git check-ignore``) about every file in the code folders, and about a new file
in each of their folders, and about the data folders the course writes at the root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT

CODE_FOLDERS = ("demos", "grader", "tests", "tools", "bin", "course", "solutions", "exercises")
# Caches that tools create in any folder, and files of student data or logs that nbgrader may
# leave wherever it runs: the only names .gitignore may hide in a code folder.
TOOL_CACHES = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache")
DATA_FILES_ANYWHERE = ("gradebook.db", "grades.csv", ".nbgrader.log")
# Where nbgrader, python -m grader, the benchmarks and the browser test write their data.
ROOT_DATA = (
    "submitted/s1/simt/simt.ipynb",
    "autograded/s1/simt/simt.ipynb",
    "feedback/s1/simt/simt.html",
    "downloaded/simt/archive/s1_simt.ipynb",
    "grading/simt/summary.json",
    "grading/simt.lock",
    "grading/simt.grades.json",
    "bench-results/distance.json",
    "browser-screenshots/step.png",
    "gradebook.db",
    "grades.csv",
)


def ignored(paths: list[str]) -> list[str]:
    """The paths .gitignore matches, tracked or not (``--no-index`` looks past the index)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin", "-z"],
        cwd=ROOT,
        input="\0".join(paths) + "\0",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: none of them is ignored
    return [path for path in proc.stdout.split("\0") if path]


def is_tool_cache(name: str) -> bool:
    return name in TOOL_CACHES or name.endswith(".egg-info")


def files_and_new_file_probes(folder: str) -> list[str]:
    """Every file under ``folder`` (tracked or not), plus a not-yet-written file in each folder."""
    paths = []
    for here, dirs, files in os.walk(ROOT / folder):
        dirs[:] = [d for d in dirs if not is_tool_cache(d)]
        relative = Path(here).relative_to(ROOT)
        paths += [(relative / name).as_posix() for name in files if name not in DATA_FILES_ANYWHERE]
        paths += [(relative / "a_new_module.py").as_posix()]
    return paths


@pytest.mark.parametrize("folder", [f for f in CODE_FOLDERS if (ROOT / f).is_dir()])
def test_no_file_in_a_code_folder_is_ignored(folder):
    assert ignored(files_and_new_file_probes(folder)) == []


def test_the_data_the_course_writes_at_the_root_is_ignored():
    assert sorted(ignored(list(ROOT_DATA))) == sorted(ROOT_DATA)


def test_tool_caches_and_student_data_are_ignored_in_any_folder():
    probes = [f"demos/grading/{cache}/x" for cache in TOOL_CACHES]
    probes += [f"exercises/simt/{name}" for name in DATA_FILES_ANYWHERE]
    assert sorted(ignored(probes)) == sorted(probes)
