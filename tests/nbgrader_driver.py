"""Running nbgrader on a throw-away copy of the course: shared by the grading tests.

The copy, nbgrader's API in an interpreter of its own, hand-ins and the scores
are grader.trials.selftest's (``python -m grader selftest`` grades the same way); here
are what only the tests need: the grader's command line, page text, a
gradebook as an earlier review left it, and its rows.
"""

from __future__ import annotations

import contextlib
import html
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat

from demos import manifest
from grader.trials.selftest import gradebook_scores as scores
from grader.trials.selftest import hand_in, nbgrader_env, scratch_course
from grader.trials.selftest import run_nbgrader as _run_nbgrader
from helpers import ROOT

# The assignments of chapters 4a to 4d, graded in tests/exercises/test_new_assignments.py
# (scan_transfer's mistakes and cheats in tests/exercises/test_scan_transfer.py) ...
NEW_ASSIGNMENTS = ["profiling", "kernel_patterns", "scan_transfer"]
# ... and all the others, the manifest's (demos/course.toml), in the whole grading workflow.
ASSIGNMENTS = [name for name in manifest.course().assignments if name not in NEW_ASSIGNMENTS]
__all__ = ["hand_in", "scores"]


def make_course(tmp: Path) -> Path:
    """A copy of the course directory (config and sources only) in *tmp*."""
    return scratch_course(ROOT, tmp)


def run_nbgrader(root: Path, steps: list[list[str]], timeout: int | None = None) -> list[dict]:
    """grader.trials.selftest.run_nbgrader, stopped after 15 minutes."""
    return _run_nbgrader(root, steps, timeout, wall=900)


def run_grader(
    root: Path, args: list[str], env: dict[str, str] | None = None, timeout: int = 900
) -> subprocess.CompletedProcess:
    """``python -m grader --course ROOT ARGS...`` as an instructor runs it (never raises)."""
    return subprocess.run(
        [sys.executable, "-m", "grader", "--course", str(root), *args],
        cwd=root,
        env={**nbgrader_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def page_text(page: Path) -> str:
    """The text of an HTML page as a reader sees it (code highlighting tags removed)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def assert_all_succeeded(results: list[dict]) -> None:
    failed = [r for r in results if not r["success"]]
    assert not failed, "\n\n".join(
        f"{r['step']}:\n{r['error'][-2000:]}\n{r['log'][-2000:]}" for r in failed
    )


def grade_earlier(root: Path, assignment: str, student: str) -> None:
    """Gradebook rows of *student*, as an earlier grading and an instructor's review left them.

    Every grade has an automatic and a manual score, every comment a manual
    text, the notebook a flag: what a later grading run must not change.
    """
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "gpu-python") as gb:
        gb.add_student(student, first_name="Zoë", last_name="Earlier")
        submission = gb.add_submission(assignment, student)
        for notebook in submission.notebooks:
            notebook.flagged = True
            notebook.late_submission_penalty = 0.5
            for n, grade in enumerate(notebook.grades):
                grade.auto_score, grade.manual_score = n % 2, 0.25 * n
            for comment in notebook.comments:
                comment.auto_comment = "auto"
                comment.manual_comment = f"{student}: reviewed {comment.name}"
        gb.db.commit()


#: Gradebook tables whose rows belong to one student, and how a row finds its student.
_STUDENT_ROWS = {
    "student": "SELECT t.* FROM student t WHERE t.id",
    "submitted_assignment": "SELECT t.* FROM submitted_assignment t WHERE t.student_id",
    "submitted_notebook": "SELECT t.* FROM submitted_notebook t JOIN submitted_assignment a "
    "ON t.assignment_id = a.id WHERE a.student_id",
    **{
        table: f"SELECT t.* FROM {table} t JOIN submitted_notebook n ON t.notebook_id = n.id "
        "JOIN submitted_assignment a ON n.assignment_id = a.id WHERE a.student_id"
        for table in ("grade", "comment")
    },
}


def gradebook_rows(root: Path, leaving_out: list[str]) -> dict[str, list[tuple]]:
    """Every row of the gradebook, table by table, but those of the students *leaving_out*.

    The course's own rows (assignments, cells, hidden test sources) and every
    other student's submission, grades, comments and scores: a grading run of
    the students left out must leave all of them as they were. Read with
    sqlite3, so reading changes nothing.
    """
    import sqlite3
    from contextlib import closing

    marks = ",".join("?" * len(leaving_out))
    rows = {}
    with closing(sqlite3.connect(f"file:{root / 'gradebook.db'}?mode=ro", uri=True)) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            query = _STUDENT_ROWS.get(table)
            query = f"{query} NOT IN ({marks})" if query else f"SELECT * FROM {table}"
            rows[table] = sorted(db.execute(query, leaving_out if "?" in query else []), key=repr)
    return rows


@contextlib.contextmanager
def simt_solution_losing_two_points(root: Path) -> Iterator[None]:
    """The course's simt solution, for the length of the block, with its reader-blocks answer
    wrong (8/10 instead of 10/10): what a setup check must refuse. Put back afterwards."""
    solution = root / "solutions" / "simt" / "simt.ipynb"
    kept = solution.read_bytes()
    broken = nbformat.reads(kept.decode(), as_version=4)
    answer = next(
        c
        for c in broken.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == "simt-reader-blocks"
    )
    answer.source = answer.source.replace("return sorted(", "return [0] or sorted(")
    try:
        nbformat.write(broken, solution)
        yield
    finally:
        solution.write_bytes(kept)
