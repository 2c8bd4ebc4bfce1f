"""Cheating submissions get what a fair grader gives, in total and cell by cell.

The cases (the instructor's solution with one shortcut each: course code, a
forbidden helper, NumPy where the device is asked for, a kernel that loops or
misses its bounds check, ...) and their expected scores are in
tests/cheating_kernel_cases.py and tests/cheating_cases.py; the session's
``batch`` fixture (tests/exercises/conftest.py) grades them all once with real
``nbgrader autograde``. The scores must be the same on a CPU and on a GPU grader.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cheating_cases import CASES, CELL_SCORES
from nbgrader_driver import scores

from grader.bench import cell_scores

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("student", "assignment", "expected"),
    [(s, a, e) for s, a, _, e in CASES],
    ids=[case[0] for case in CASES],
)
def test_cheat_gets_a_fair_score(batch: Path, student: str, assignment: str, expected: int) -> None:
    assert scores(batch)[(assignment, student)] == (expected, 10)
    assert cell_scores(batch, assignment, student) == CELL_SCORES[student]
    assert sum(CELL_SCORES[student].values()) == expected
