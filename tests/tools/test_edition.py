"""The student edition (tools/build_student_edition.py): complete, runnable, and free of answers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, needs_course_venv, solve_exercise

sys.path.insert(0, str(ROOT / "tools"))
import build_student_edition as edition  # noqa: E402

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("edition") / "gpu-course"
    edition.build(dest)
    return dest


def _solution_lines() -> set[str]:
    """Every substantial line of code between BEGIN and END SOLUTION in solutions/.

    A line that the assignment also gives the student outside the solution
    regions (e.g. a slow version to improve on) is no leak, so it is left out.
    """
    lines = set()
    for path in (ROOT / "solutions").rglob("*.ipynb"):
        found, given = set(), set()
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            for block in re.findall(
                r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.DOTALL
            ):
                found |= {ln.strip() for ln in block.splitlines() if len(ln.strip()) > 25}
            outside = re.sub(
                r"### BEGIN SOLUTION\n.*?### END SOLUTION", "", source, flags=re.DOTALL
            )
            outside = re.sub(
                r"### BEGIN HIDDEN TESTS\n.*?### END HIDDEN TESTS", "", outside, flags=re.DOTALL
            )
            given |= {ln.strip() for ln in outside.splitlines()}
        lines |= found - given
    return lines


def _all_text(folder: Path) -> dict[Path, str]:
    texts = {}
    for path in folder.rglob("*"):
        if path.is_file() and not {".venv", "node_modules"} & set(path.parts):
            try:
                texts[path] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return texts


def test_edition_holds_no_solution_or_hidden_test(built):
    texts = _all_text(built)
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "HIDDEN"):
        hits = [str(p.relative_to(built)) for p, t in texts.items() if marker in t]
        assert not hits, f"{marker!r} in {hits}"
    solutions = _solution_lines()
    assert len(solutions) > 10  # the checks below really look for something
    in_exercises = {
        ln for ln in solutions for p, t in texts.items() if "exercises" in p.parts and ln in t
    }
    assert not in_exercises, f"solution code in the students' exercises: {sorted(in_exercises)[:3]}"
    # Elsewhere, a line the chapters or demos teach anyway (a Conv2D layer, a loop
    # header) is no leak; any other solution line is.
    taught = "\n".join(
        t for p, t in _all_text(ROOT).items() if p.parts[len(ROOT.parts)] in ("course", "demos")
    )
    private = {ln for ln in solutions if ln not in taught}
    assert len(private) > 5
    leaked = {ln for ln in private for t in texts.values() if ln in t}
    assert not leaked, f"solution code in the student edition: {sorted(leaked)[:3]}"


def test_edition_has_the_course_and_nothing_for_graders(built):
    for present in [
        "course/README.md",
        "exercises",
        "demos/hardware.py",
        "bin/gpu-jupyter",
        "course.sh",
        "pyproject.toml",
        "requirements/constraints.txt",
        "README.md",
        "jupyter/student/labconfig/page_config.json",
        "jupyter/data/labextensions/@gpu-course/validate-scope/package.json",
        "jupyter/extensions/validate-scope/src/index.ts",
        "tests/conftest.py",
        "tests/jupyter/test_labextension.py",
    ]:
        assert (built / present).exists(), present
    for absent in [
        "solutions",
        "nbgrader_config.py",
        "gradebook.db",
        "tools",
        "demos/grader",
        "jupyter/instructor",
        "submitted",
        "autograded",
        "feedback",
        "downloaded",
        "tests/exercises/test_grading_workflow.py",
        "tests/tools/test_edition.py",
        "jupyter/extensions/validate-scope/node_modules",  # what npm installs to build it
        "jupyter/extensions/validate-scope/lib",
    ]:
        assert not (built / absent).exists(), absent
    shipped = sorted(p.parent.name for p in (built / "exercises").glob("*/*.ipynb"))
    assert shipped == ASSIGNMENTS
    # exercises/ is the students' working copy, not nbgrader's release folder of any config;
    # the one nbgrader setting shipped is Validate's (its kernels on Unix sockets)
    configs = {p.relative_to(built).as_posix() for p in built.rglob("nbgrader_config.*")}
    assert configs <= {"jupyter/student/nbgrader_config.json"}, configs
    assert "./course.sh lab" in (built / "README.md").read_text()
    assert os.access(built / "course.sh", os.X_OK) and os.access(
        built / "bin" / "gpu-jupyter", os.X_OK
    )


def test_edition_commands_for_instructors_refuse_clearly(built):
    for command in (["instructor"], ["student-edition", str(built / "x")]):
        proc = subprocess.run(
            [str(built / "course.sh"), *command], check=False, capture_output=True, text=True
        )
        assert proc.returncode == 1 and "this is the student edition" in proc.stderr


def test_build_refuses_a_foreign_folder_and_replaces_an_old_edition(tmp_path, built):
    foreign = tmp_path / "thesis"
    foreign.mkdir()
    (foreign / "chapter1.tex").write_text("mine")
    with pytest.raises(edition.EditionError, match="not empty"):
        edition.build(foreign)
    assert (foreign / "chapter1.tex").read_text() == "mine"  # nothing lost
    with pytest.raises(edition.EditionError, match="inside the instructor repository"):
        edition.build(ROOT / "student-edition")
    old = tmp_path / "old"
    shutil.copytree(built, old)
    (old / ".git").mkdir()
    (old / "course" / "stale.ipynb").write_text("{}")
    edition.build(old)
    assert (old / ".git").is_dir() and not (old / "course" / "stale.ipynb").exists()


def _validate(notebook: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", str(notebook)],
        check=False,
        capture_output=True,
        text=True,
        cwd=notebook.parent,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_solved_exercise_passes_validate_and_survives_a_regeneration(tmp_path, built):
    """The student's edition is a separate copy: regenerating the release never touches it."""
    student = tmp_path / "student"
    shutil.copytree(built, student, ignore=shutil.ignore_patterns(".venv"))
    mine = student / "exercises" / "simt" / "simt.ipynb"
    blank = _validate(mine)
    assert "failed" in (blank.stdout + blank.stderr).lower() or blank.returncode != 0
    solve_exercise(mine, "simt")
    solved = mine.read_text()
    assert "NotImplementedError" not in solved
    checked = _validate(mine)
    assert "Success! Your notebook passes all the tests." in checked.stdout, (
        checked.stdout + checked.stderr
    )
    # The instructor regenerates the assignment in (a copy of) the instructor repository.
    instructor = tmp_path / "instructor"
    instructor.mkdir()
    shutil.copy2(ROOT / "nbgrader_config.py", instructor)
    shutil.copytree(ROOT / "solutions", instructor / "solutions")
    shutil.copytree(ROOT / "exercises", instructor / "exercises")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", "simt", "--force"],
        cwd=instructor,
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "NotImplementedError" in (instructor / "exercises" / "simt" / "simt.ipynb").read_text()
    assert mine.read_text() == solved  # the student's solved copy is untouched


@pytest.mark.slow
@needs_course_venv
def test_edition_runs_its_own_test_command(built):
    """`./course.sh test` in the edition: it collects every test and chapter, and a subset passes.

    The edition reuses this environment (same pyproject and constraints, so its
    install stamp matches and nothing is installed). The full run of the same tests
    and chapters is the instructor repository's own suite; here a fast,
    representative subset runs from inside the edition: its packaging check, its
    JupyterLab extension, unit tests of the SIMT code and Run All of chapter 2.
    """
    venv = built / ".venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # The edition shares this .venv: it must never reinstall the package from its
    # throw-away folder into it (every later test would then import that copy).
    env["COURSE_NO_INSTALL"] = "1"
    collected = subprocess.run(
        [str(built / "course.sh"), "test", "--co", "-q", "-p", "no:cacheprovider"],
        cwd=built,
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert (
        "course/02-simt-model.ipynb" in collected.stdout
        and "tests/demos/test_simt.py" in collected.stdout
    )
    subset = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/test_packaging.py",
            "tests/jupyter/test_labextension.py",
            "tests/demos/test_simt.py",
            "course/02-simt-model.ipynb",
            "--nbval-lax",
        ],
        cwd=built,
        check=False,
        capture_output=True,
        text=True,
        env={**env, "NUMBA_ENABLE_CUDASIM": "1"},
        timeout=600,
    )
    assert subset.returncode == 0, subset.stdout[-3000:] + subset.stderr[-3000:]
    assert re.search(r"\d+ passed", subset.stdout) and "failed" not in subset.stdout
