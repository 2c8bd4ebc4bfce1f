"""Before a class is graded: the solution must get full marks where the students will be graded.

The cell limits are measured on the solution (:mod:`grader.integration.cell_budgets`),
but outside the sandbox and without the hidden tests, so a setup the sandbox
cannot run (a module it cannot import, a data file it cannot see, a hidden
test that fails for the solution itself) graded a whole class 0, each
notebook ``graded``, with nothing said. So each run first grades the
solution notebook as one more student, through the same path
(:func:`grader.run.one_student.grade_student`: the sandbox, its limits, the
hidden tests), and refuses the class unless it scores full points. A pass is
remembered per solution version and grading setting (``<work>/solution-check-*.json``),
so a rerun of the same class costs nothing more.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from grader.run.graded import cell_errors
from grader.run.one_student import grade_student

if TYPE_CHECKING:
    from grader.run.settings import Batch

#: The pseudo-student the solution is graded as (in the run's folder only, never merged).
CHECK_STUDENT = "grader-solution-check"


def _record(batch: Batch, solution: Path) -> Path:
    setting = {k: v for k, v in asdict(batch).items() if k not in ("course", "work", "workers")}
    key = hashlib.sha256(solution.read_bytes() + json.dumps(setting, default=str).encode())
    return batch.work / f"solution-check-{key.hexdigest()[:16]}.json"


def _score(root: Path, batch: Batch) -> tuple[float, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(batch.assignment, CHECK_STUDENT)
        return submission.score, submission.max_score


def check_solution(
    batch: Batch, template: Path, uid: int | None, stop: threading.Event | None = None
) -> str | None:
    """Why the class cannot be graded as set up (one line), or None when the solution passes.

    A *stop* of the run ends the check as it ends a student's notebook.
    """
    try:
        return _check(batch, template, uid, stop)
    except Exception as error:  # noqa: BLE001  (the reason the class is not graded)
        return f"the solution could not be checked ({type(error).__name__}: {error})"


def _check(
    batch: Batch, template: Path, uid: int | None, stop: threading.Event | None
) -> str | None:
    folder = batch.course / "solutions" / batch.assignment
    solution = folder / f"{batch.assignment}.ipynb"
    if not solution.is_file():
        return None  # nothing to check against (the cell limits say so too)
    record = _record(batch, solution)
    if record.is_file():
        return None
    outcome = grade_student(batch, CHECK_STUDENT, template, uid, stop, submitted=folder)
    root = batch.work / CHECK_STUDENT
    try:
        if outcome.status == "stopped":
            return "the run was stopped while the solution was checked"
        if outcome.status != "graded":
            return f"the solution could not be graded here: {'; '.join(outcome.flags)[:300]}"
        score, max_score = _score(root, batch)
        if score < max_score:
            errors = "; ".join(
                f"{k}: {v}" for k, v in cell_errors(root, batch.assignment, CHECK_STUDENT).items()
            )
            return (
                f"the solution scores {score:g}/{max_score:g} in the grading sandbox "
                f"({errors[:300] or 'see ' + str(batch.work / 'solution-check.log')})"
            )
    finally:
        log = root / "autograde.log"
        if log.is_file():
            shutil.copy2(log, batch.work / "solution-check.log")
        shutil.rmtree(root, ignore_errors=True)
    record.write_text(json.dumps({"score": score, "max_score": max_score}))
    return None
