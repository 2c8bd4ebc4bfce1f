"""Plain ``nbgrader autograde`` in the course folder itself is as safe as ``python -m grader``.

An instructor may grade with nbgrader's own command (or the formgrader's
button) in the real course folder, one student after the other in one
process. Its kernel runs in the same sandbox (``GuardedExecute``), so:

* a process a student leaves behind (detached, in a session of its own) dies
  with its notebook and cannot touch the next student's graded notebook, the
  gradebook or the config while they are graded;
* the config and ``demos/`` cannot be edited, so no later student's feedback
  shows hidden tests;
* a split cell (one grade id twice) fails that student alone; the next one is
  graded;
* a notebook handed in as a link (to the solutions, say), which nbgrader
  reads as root, is not graded.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    assert_all_succeeded,
    grade_earlier,
    gradebook_rows,
    make_course,
    run_nbgrader,
    scores,
)

from grader.sandbox import isolation as sandbox
from helpers import ROOT

pytestmark = pytest.mark.slow
ASSIGNMENT = "simt"

# Starts a daemon that outlives its cell, waits until the next student is being
# graded, then zeroes that student's graded notebook and the gradebook; edits the
# config and the course package at once.
DAEMON = r"""
import os, time
from pathlib import Path
course = Path(COURSE)
for target in (course / "nbgrader_config.py", Path(DEMOS) / "__init__.py"):
    try:
        with open(target, "a") as f:
            f.write("\nc.GenerateFeedback.preprocessors = []\n")
        print("EDITED", target.name)
    except OSError as error:
        print("blocked", type(error).__name__)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(4)
        for target in (course / "autograded" / "b-honest" / "simt" / "simt.ipynb",
                       course / "gradebook.db"):
            try:
                target.write_bytes(b"\0" * 4096)
            except OSError:
                pass
    os._exit(0)
"""


def _solution(root: Path) -> nbformat.NotebookNode:
    return nbformat.read(root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def _hand_in(root: Path, student: str, nb: nbformat.NotebookNode) -> None:
    target = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    if not sandbox.own_user(sandbox.detect_level()):
        pytest.skip("needs a sandbox with a user id of its own: the attacks are real")
    root = make_course(tmp_path_factory.mktemp("plain"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))
    grade_earlier(root, ASSIGNMENT, "zoe")  # graded and reviewed before: rows to keep
    daemon = DAEMON.replace("COURSE", repr(str(root)))
    daemon = daemon.replace("DEMOS", repr(str(ROOT / "demos")))
    attacker = _solution(root)
    attacker.cells.insert(1, nbformat.v4.new_code_cell(daemon))
    _hand_in(root, "a-daemon", attacker)
    honest = _solution(root)  # still running when the daemon would strike
    honest.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(8)"))
    _hand_in(root, "b-honest", honest)
    split = _solution(root)
    index, cell = next(
        (i, c) for i, c in enumerate(split.cells) if c.metadata.get("nbgrader", {}).get("solution")
    )
    split.cells.insert(index, nbformat.v4.new_code_cell("x = 1", metadata=dict(cell.metadata)))
    _hand_in(root, "c-split", split)
    # a hand-in whose notebook is a link to the solutions (nbgrader reads it as root)
    linked = root / "submitted" / "c-linked" / ASSIGNMENT
    linked.mkdir(parents=True)
    (linked / f"{ASSIGNMENT}.ipynb").symlink_to(root / "solutions" / ASSIGNMENT / "simt.ipynb")
    _hand_in(root, "d-honest", _solution(root))
    watched = [root / "nbgrader_config.py", ROOT / "demos" / "__init__.py"]
    before = {str(p): _digest(p) for p in watched}
    students = ["a-daemon", "b-honest", "c-split", "c-linked", "d-honest"]
    rows_before = gradebook_rows(root, leaving_out=students)
    results = run_nbgrader(root, [["autograde", ASSIGNMENT, s] for s in students])
    return {
        "root": root,
        "results": {r["step"][2]: r for r in results},
        "changed": [str(p) for p in watched if before[str(p)] != _digest(p)],
        "rows": (rows_before, gradebook_rows(root, leaving_out=students)),
    }


def test_the_config_and_the_course_package_stay_as_they_were(graded) -> None:
    assert graded["changed"] == []
    nb = nbformat.read(
        graded["root"] / "autograded" / "a-daemon" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        as_version=4,
    )
    output = json.dumps(nb.cells[1].outputs)
    assert "EDITED" not in output and output.count("blocked") == 2, output
    # its cell imports os: the hidden tests after it are left to a human, not scored
    # (grader.verdicts.source_gate), by plain nbgrader as by python -m grader
    assert scores(graded["root"])[(ASSIGNMENT, "a-daemon")] == (0, 10)
    assert "the grader cannot trust how your code got its answers" in json.dumps(nb.cells)


def test_a_process_left_behind_cannot_touch_the_next_student(graded) -> None:
    assert graded["results"]["b-honest"]["success"], graded["results"]["b-honest"]["log"][-2000:]
    assert scores(graded["root"])[(ASSIGNMENT, "b-honest")] == (10, 10)
    graded_nb = graded["root"] / "autograded" / "b-honest" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nbformat.read(graded_nb, as_version=4)  # still a notebook, not zeros
    with sqlite3.connect(graded["root"] / "gradebook.db") as db:
        assert db.execute("pragma integrity_check").fetchone() == ("ok",)
    # the course's rows and an earlier student's grades, comments and scores are as they were
    before, after = graded["rows"]
    assert before["grade"] and before["comment"]
    assert [table for table in before if before[table] != after.get(table)] == []


def test_a_notebook_that_is_a_link_is_not_graded(graded) -> None:
    linked = graded["results"]["c-linked"]
    assert not linked["success"]
    assert "simt.ipynb in the hand-in is a symbolic link: not graded" in linked["log"], linked
    assert (ASSIGNMENT, "c-linked") not in scores(graded["root"]) or scores(graded["root"])[
        (ASSIGNMENT, "c-linked")
    ][0] == 0
    assert not list((graded["root"] / "autograded" / "c-linked").rglob("*.ipynb"))


def test_a_split_cell_does_not_stop_the_students_after_it(graded) -> None:
    assert graded["results"]["d-honest"]["success"]
    assert scores(graded["root"])[(ASSIGNMENT, "d-honest")] == (10, 10)
