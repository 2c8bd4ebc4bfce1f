"""Submissions that try to break the grader, graded in one batch with a good one.

An endless loop, a notebook that fails at its first import, a student who
weakened a read-only test cell, one who deleted a test cell, and a file that is
not JSON at all: each must get the score it deserves (or a clear error), and
the good submission after them must still be graded. One assignment (simt)
is enough here; it is the quickest to run.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    assert_all_succeeded,
    hand_in,
    make_course,
    page_text,
    run_nbgrader,
    scores,
)

pytestmark = pytest.mark.slow

ASSIGNMENT = "simt"
FULL_MARKS = 10  # 2 + 4 + 4 points
#: Seconds a cell may run here: the simt cells need about one.
CELL_TIMEOUT = 10


def solution(root: Path) -> nbformat.NotebookNode:
    return nbformat.read(root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def needs_manual_grade(root: Path, student: str) -> bool:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return bool(gb.find_submission(ASSIGNMENT, student).needs_manual_grade)


def as_text(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    root = make_course(tmp_path_factory.mktemp("bad"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))

    looping = solution(root)
    cell(looping, "simt-reader-blocks").source = "while True:\n    pass"
    hand_in(root, "carol", ASSIGNMENT, as_text(looping))

    broken_import = solution(root)
    index_cell = cell(broken_import, "simt-reader-blocks")
    index_cell.source = "import a_module_that_does_not_exist\n" + index_cell.source
    hand_in(root, "dave", ASSIGNMENT, as_text(broken_import))

    # Wrong in general, right for the visible cases; and the test cell emptied.
    cheating = solution(root)
    cell(cheating, "simt-reader-blocks").source = (
        "def reader_blocks(element, n, threads_per_block):\n"
        "    return sorted({t // 32 for t in (element - 1, element, element + 1) if 0 <= t < n})"
    )
    cell(cheating, "simt-test-reader-blocks").source = "pass"
    hand_in(root, "erin", ASSIGNMENT, as_text(cheating))

    deleted = solution(root)
    deleted.cells.remove(cell(deleted, "simt-test-launch-size"))
    hand_in(root, "george", ASSIGNMENT, as_text(deleted))

    hand_in(root, "frank", ASSIGNMENT, '{"cells": [ this is not json')
    hand_in(root, "zoe", ASSIGNMENT, root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")

    students = ["frank", "carol", "dave", "erin", "george", "zoe"]
    steps = [["autograde", ASSIGNMENT, s] for s in students] + [["generate_feedback", ASSIGNMENT]]
    results = run_nbgrader(root, steps, timeout=CELL_TIMEOUT)
    return root, {r["step"][-1] if r["step"][0] == "autograde" else "feedback": r for r in results}


def test_good_submission_after_bad_ones_is_graded(batch) -> None:
    root, results = batch
    assert results["zoe"]["success"], results["zoe"]["error"]
    assert scores(root)[(ASSIGNMENT, "zoe")] == (FULL_MARKS, FULL_MARKS)


def test_invalid_json_is_reported_not_graded(batch) -> None:
    root, results = batch
    assert not results["frank"]["success"]
    assert "frank" in results["frank"]["log"] + results["frank"]["error"]
    assert scores(root).get((ASSIGNMENT, "frank"), (0, FULL_MARKS))[0] == 0


def test_endless_loop_is_stopped_by_the_cell_timeout(batch) -> None:
    root, results = batch
    text = results["carol"]["log"] + results["carol"]["error"]
    assert "timed out" in text.lower() or "timeout" in text.lower(), text[-2000:]
    # Only the looping cell is lost; the cells after it still ran and scored.
    assert scores(root)[(ASSIGNMENT, "carol")] == (FULL_MARKS - 2, FULL_MARKS)


def test_failing_import_costs_only_the_cells_that_need_it(batch) -> None:
    root, results = batch
    assert results["dave"]["success"], results["dave"]["error"]
    # reader_blocks is never defined: its 2 points are lost, the kernel parts still count.
    assert scores(root)[(ASSIGNMENT, "dave")] == (FULL_MARKS - 2, FULL_MARKS)


def test_edited_test_cell_is_restored(batch) -> None:
    root, results = batch
    assert results["erin"]["success"], results["erin"]["error"]
    # The original test cell ran again, and its hidden part caught the wrong answer.
    assert scores(root)[(ASSIGNMENT, "erin")] == (FULL_MARKS - 2, FULL_MARKS)


def test_deleted_test_cell_scores_nothing_and_is_flagged(batch) -> None:
    root, results = batch
    assert results["george"]["success"], results["george"]["error"]
    assert scores(root)[(ASSIGNMENT, "george")] == (FULL_MARKS - 4, FULL_MARKS)
    assert needs_manual_grade(root, "george"), (
        "a deleted test cell must be flagged for the instructor"
    )
    assert not needs_manual_grade(root, "zoe")


def test_feedback_for_a_failed_hidden_test_does_not_show_it(batch) -> None:
    root, results = batch
    assert results["feedback"]["success"], results["feedback"]["error"]
    text = page_text(root / "feedback" / "erin" / ASSIGNMENT / f"{ASSIGNMENT}.html")
    assert "assert reader_blocks(31, 100, 32) == [0, 1]" in text  # visible test: shown
    assert "GradingFailure" in text  # the failure itself: shown, as one generic sentence
    assert "reader_blocks is wrong for a hidden input" in text
    assert "rng.integers(1, 3000)" not in text  # hidden test: not shown
    assert "BEGIN HIDDEN TESTS" not in text
