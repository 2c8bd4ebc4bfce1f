"""Running nbgrader on a throw-away copy of the course: shared by the grading tests.

A copy of the course directory, nbgrader's Python API driven in a fresh
interpreter (nbgrader keeps global state that must not leak into pytest),
hand-ins, and the scores read back from the gradebook.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ["simt", "cupy_port", "numba_distance", "cnn", "multigpu"]
# The assignments of chapters 4a and 4b (graded in tests/exercises/test_new_assignments.py).
NEW_ASSIGNMENTS = ["profiling", "kernel_patterns"]

# Runs in a fresh interpreter inside the course copy: nbgrader keeps global
# state (traitlets singletons, logging) that must not leak into pytest.
_DRIVER = r"""
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

root, steps, out, timeout = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
os.chdir(root)
config = PyFileConfigLoader("nbgrader_config.py", path=root).load_config()
if timeout:
    config.Execute.timeout = int(timeout)
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
results = []
for method, *args in steps:
    result = getattr(api, method)(*args)
    results.append({"step": [method, *args], "success": bool(result["success"]),
                    "error": result.get("error") or "", "log": result.get("log") or ""})
with open(out, "w") as f:
    json.dump(results, f)
"""


def make_course(tmp: Path) -> Path:
    """A copy of the course directory (config and sources only) in *tmp*."""
    root = tmp / "course"
    root.mkdir()
    shutil.copy2(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(REPO / "solutions", root / "solutions")
    return root


def nbgrader_env() -> dict[str, str]:
    """nbgrader calls ``alembic``, so the environment's bin/ must be on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def run_nbgrader(root: Path, steps: list[list[str]], timeout: int | None = None) -> list[dict]:
    """Run NbGraderAPI methods, e.g. ``[["autograde", "simt", "alice"]]``, in one subprocess."""
    out = root / f"nbgrader-results-{os.getpid()}.json"
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(root), json.dumps(steps), str(out), str(timeout or "")],
        cwd=root,
        env=nbgrader_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, (
        f"nbgrader driver failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    results = json.loads(out.read_text())
    out.unlink()
    return results


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


def hand_in(root: Path, student: str, assignment: str, notebook: Path | str) -> Path:
    """Put a notebook (a path to copy, or raw text) where ``nbgrader autograde`` looks."""
    target = root / "submitted" / student / assignment / f"{assignment}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(notebook, Path):
        shutil.copy2(notebook, target)
    else:
        target.write_text(notebook)
    return target


def scores(root: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(assignment, student) -> (score, max_score) from the gradebook."""
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                found[(assignment.name, submission.student.id)] = (
                    submission.score,
                    submission.max_score,
                )
    return found


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
