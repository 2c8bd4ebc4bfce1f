"""Build the student edition of the course: what students clone, without anything for graders.

This repository is the instructor's: it holds ``solutions/`` (every solution and
hidden test), the nbgrader configuration and the grading tools, and must stay
private. The student edition is a separate folder made from it:

* ``course/`` (the chapters the course manifest, ``demos/course.toml``, lists: a
  notebook not yet in it stays here), ``demos/`` (without instructor-only parts),
  ``bin/``, ``course.sh``, ``pyproject.toml``, ``environment.yml``, ``requirements/``;
* ``exercises/``: the released notebooks of the manifest's assignments, now the
  students' own working copies (no nbgrader configuration points at them, so nothing
  can regenerate them); an assignment not yet released stops the build;
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
import importlib.util
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = ".student-edition"  # marks a folder this tool made, so a rebuild may replace it

# Copied as they are (folders recursively, files alone).
SHIPPED = [
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
# Besides these, every ``*_cases.py`` (submissions the grader's tests grade, right answers
# among them) stays out: the name is the rule, so a new set of cases cannot leak.
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
    "docs/test_rendered_docs.py",  # the benchmarks page and its renderer: not in the edition
    "docs/test_site.py",  # the docs site: not in the edition
    "jupyter/test_browser.py",
    "nbgrader_driver.py",  # drives nbgrader through grader.trials.selftest
    "sandbox_box.py",  # the grader's sandbox, for its tests
    "tools/test_edition.py",
    "tools/test_add_a_chapter.py",  # builds an edition from a copy of the instructor's tree
}
CASES_SUFFIX = "_cases.py"
INSTRUCTOR_TEST_PATTERN = re.compile(
    r"solutions/|\"solutions\"|nbgrader_config|test_nbgrader|run_grader|local_cluster|fake-lsf"
    r"|^from grader|^import grader|\"grader\"",
    re.M,
)
# Text that must never reach students.
FORBIDDEN = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
# Sections of the students' guide that the edition's README takes as they are.
STUDENT_GUIDE = ROOT / "docs" / "students.md"
README_SECTIONS = ("course", "cluster")


class EditionError(RuntimeError):
    """The edition cannot be built (bad target folder, or forbidden text found)."""


def _ignore(_folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in EXCLUDED_NAMES or n.endswith((".pyc", ".egg-info"))}


def course_manifest() -> Any:
    """The course manifest, read by ``demos/manifest.py`` loaded on its own: importing the
    ``demos`` package would need its dependencies, and this tool needs only the standard
    library."""
    spec = importlib.util.spec_from_file_location("course_manifest", ROOT / "demos" / "manifest.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look up the module of their class
    spec.loader.exec_module(module)
    try:
        return module.load(ROOT / "demos" / "course.toml")
    except module.ManifestError as error:
        raise EditionError(str(error)) from None


def _check_sources(course: Any) -> None:
    """Every chapter's notebook is there and every assignment is released, or EditionError."""
    for chapter in course.chapters:
        if not (ROOT / "course" / chapter.notebook).is_file():
            raise EditionError(f"chapter {chapter.id}: course/{chapter.notebook} does not exist")
    for assignment in course.assignments.values():
        released = Path("exercises") / assignment.name / assignment.notebook
        if not (ROOT / released).is_file():
            raise EditionError(
                f"assignment {assignment.name}: {released} is not released: run "
                f"nbgrader generate_assignment {assignment.name} first"
            )


def _ship_chapters_and_assignments(course: Any, dest: Path) -> None:
    """``course/`` with the manifest's chapters only; each assignment's released folder."""
    chapters = {chapter.notebook for chapter in course.chapters}

    def drafts(folder: str, names: list[str]) -> set[str]:
        unlisted = {n for n in names if n.endswith(".ipynb") and n not in chapters}
        return _ignore(folder, names) | (unlisted if Path(folder) == ROOT / "course" else set())

    shutil.copytree(ROOT / "course", dest / "course", ignore=drafts, symlinks=False)
    for assignment in course.assignments.values():
        _copy(f"exercises/{assignment.name}", dest)


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
        if path.name.endswith(CASES_SUFFIX):
            continue
        if path.name.startswith("test_") and INSTRUCTOR_TEST_PATTERN.search(path.read_text()):
            continue
        keep.append(path)
    return keep


def readme_section(name: str) -> str:
    """One ``<!-- section:NAME -->`` block of the students' guide, markers removed."""
    text = STUDENT_GUIDE.read_text(encoding="utf-8")
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
    course = course_manifest()
    _check_sources(course)  # a bad manifest or a missing file stops it before any change
    _prepare(dest)
    _ship_chapters_and_assignments(course, dest)
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
