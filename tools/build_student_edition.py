"""Build the student edition of the course: what students clone, without anything for graders.

This repository is the instructor's: it holds ``solutions/`` (every solution and
hidden test), the nbgrader configuration and the grading tools, and must stay
private. The student edition is a separate folder made from it:

* ``course/`` (the chapters), ``demos/`` (without instructor-only parts), ``bin/``,
  ``course.sh``, ``pyproject.toml``, ``environment.yml``, ``requirements/``;
* ``exercises/``: the released notebooks, now the students' own working copies
  (no nbgrader configuration points at them, so nothing can regenerate them);
* ``jupyter/common`` and ``jupyter/student``: the student mode of JupyterLab;
  ``jupyter/data``, the course's prebuilt JupyterLab extension, and its source;
* the tests that check a student's install, and a README written for students.

It holds no ``solutions/``, no hidden tests, no gradebook and no instructor
configuration; the build refuses to finish if any solution or hidden-test marker
slipped in. Run it after every change of ``solutions/`` (after releasing with
``nbgrader generate_assignment``), then publish the folder.

Usage: ``./course.sh student-edition DIR`` (or ``python tools/build_student_edition.py DIR``).
Only the Python standard library is needed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".student-edition"  # marks a folder this tool made, so a rebuild may replace it

# Copied as they are (folders recursively, files alone).
SHIPPED = [
    "course",
    "exercises",
    "demos",
    "bin",
    "course.sh",
    "pyproject.toml",
    "environment.yml",
    "requirements",
    "jupyter/common",
    "jupyter/student",
    "jupyter/README.md",
    "jupyter/data",  # the course's JupyterLab extension, prebuilt (Validate only on exercises)
    # and its source, file by file: not what npm and the build leave next to it
    *(
        f"jupyter/extensions/validate-scope/{name}"
        for name in (
            "src",
            "package.json",
            "package-lock.json",
            "tsconfig.json",
            "stamp-source.mjs",
            ".gitignore",
        )
    ),
]
# Never shipped, wherever they appear: instructor-only code, caches, grading data.
EXCLUDED_NAMES = {
    "grader",  # demos/grader: instructor-only grading tools
    "__pycache__",
    ".ipynb_checkpoints",
    ".pytest_cache",
    "gradebook.db",
    "submitted",
    "autograded",
    "feedback",
    "downloaded",
    "bench-results",
}
# Tests that need the instructor's material (solutions, nbgrader's course folder, the
# grader, the edition builder, BENCHMARKS.md and grader/results/) or a test cluster (Slurm, sshd):
# developers run them, students don't. Paths under tests/; a folder stands for all it holds.
INSTRUCTOR_TESTS = {
    "bin",  # bin/gpu-jupyter against a real Slurm and sshd
    "gpu_jupyter_helpers.py",  # what the tests of bin/ share
    "deploy",
    "exercises",
    "grader",
    "slurm",
    "demos/grading",  # the assignments' test helpers: the instructor's
    "demos/test_provenance.py",
    "docs/test_notebook_format.py",
    "jupyter/test_browser.py",
    "nbgrader_driver.py",  # drives nbgrader through grader.selftest
    "cheating_cases.py",  # the cheating submissions tests/exercises grades, with solutions
    "cheating_kernel_cases.py",  # its kernel assignments' part
    "copy_cases.py",  # honest and copied answers for the grader's copy detection
    "sandbox_box.py",  # the grader's sandbox, for its tests
    "tools/test_edition.py",
}
INSTRUCTOR_TEST_PATTERN = re.compile(
    r"solutions/|\"solutions\"|nbgrader_config|test_nbgrader|run_grader|local_cluster|fake-lsf"
    r"|^from grader|^import grader|\"grader\"",
    re.M,
)
# Text that must never reach students.
FORBIDDEN = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
# Sections of the instructor README that students need as they are.
README_SECTIONS = ("course", "cluster")


class EditionError(RuntimeError):
    """The edition cannot be built (bad target folder, or forbidden text found)."""


def _ignore(_folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in EXCLUDED_NAMES or n.endswith((".pyc", ".egg-info"))}


def _copy(rel: str, dest: Path) -> None:
    src = ROOT / rel
    if src.is_dir():
        shutil.copytree(src, dest / rel, ignore=_ignore, symlinks=False)
    elif src.exists():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)


def student_tests() -> list[Path]:
    """The files of tests/ that make sense in a student's copy (see INSTRUCTOR_TESTS)."""
    tests = ROOT / "tests"
    keep = []
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        if any(p.as_posix() in INSTRUCTOR_TESTS for p in [rel, *rel.parents]):
            continue
        if path.name.startswith("test_") and INSTRUCTOR_TEST_PATTERN.search(path.read_text()):
            continue
        keep.append(path)
    return keep


def readme_section(name: str) -> str:
    """One ``<!-- section:NAME -->`` block of the instructor README, markers removed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- section:{name} -->\n(.*?)<!-- /section:{name} -->", text, re.DOTALL)
    return match.group(1).strip() + "\n" if match else ""


def student_readme() -> str:
    template = (ROOT / "tools" / "student-edition" / "README.md").read_text(encoding="utf-8")
    for name in README_SECTIONS:
        template = template.replace(f"{{{{section:{name}}}}}", readme_section(name))
    return template


def _prepare(dest: Path) -> None:
    """An empty folder, or a previous edition (replaced, except its .git)."""
    if dest.exists() and not dest.is_dir():
        raise EditionError(f"{dest} exists and is not a folder")
    if dest.resolve() == ROOT or ROOT in dest.resolve().parents:
        raise EditionError(
            f"{dest} is inside the instructor repository; choose a folder outside it"
        )
    if dest.is_dir():
        entries = [p for p in dest.iterdir() if p.name != ".git"]
        if entries and not (dest / MARKER).exists():
            raise EditionError(
                f"{dest} is not empty and is not a student edition built before; "
                "choose a new or empty folder (nothing was changed)"
            )
        for entry in entries:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    dest.mkdir(parents=True, exist_ok=True)


def forbidden_text(dest: Path) -> list[str]:
    """'file: marker' for every solution or hidden-test marker found in the edition."""
    found = []
    for path in dest.rglob("*"):
        if ".git" in path.parts or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{path.relative_to(dest)}: {m}" for m in FORBIDDEN if m in text]
    return found


def build(dest: Path) -> Path:
    """Build the student edition into ``dest``; returns it. Raises EditionError on failure."""
    dest = Path(dest).expanduser()
    _prepare(dest)
    for rel in SHIPPED:
        _copy(rel, dest)
    (dest / "tests").mkdir()
    for path in student_tests():
        copy = dest / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
    (dest / "README.md").write_text(student_readme(), encoding="utf-8")
    (dest / ".gitignore").write_text(
        ".venv/\n__pycache__/\n*.egg-info/\n.pytest_cache/\n.ipynb_checkpoints/\nbench-results/\n",
        encoding="utf-8",
    )
    (dest / MARKER).write_text(
        "Built by the instructor's tools/build_student_edition.py; rebuilt after every change.\n",
        encoding="utf-8",
    )
    leaks = forbidden_text(dest)
    if leaks:
        raise EditionError("solution or hidden-test text in the edition: " + "; ".join(leaks[:5]))
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="a new or empty folder, or an edition built before")
    args = parser.parse_args(argv)
    try:
        dest = build(args.dest)
    except EditionError as error:
        print(f"student edition: {error}", file=sys.stderr)
        return 1
    print(
        f"student edition built in {dest}: publish it (e.g. git init there, push to a public repo)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
