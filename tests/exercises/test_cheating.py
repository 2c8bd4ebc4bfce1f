"""Cheating submissions score what a fair grader gives; feedback and kernel see nothing hidden.

The cases (the instructor's solution with one shortcut each: course code, a
forbidden helper, NumPy where the device is asked for, a kernel that loops or
misses its bounds check, ...) and their expected scores are in
tests/cheating_kernel_cases.py and tests/cheating_cases.py; the module's
``batch`` fixture grades them all once with real ``nbgrader autograde``. The
scores must be the same on a CPU and on a GPU grader. Cases whose source could
forge what the kernel reports of how they worked are refused by the grader's
source gate and must reach a human (``FLAGGED``). Three cases (one prints
what it is given, one disables the checks with an IPython input transformer,
one writes to stderr) also show that the feedback may show the visible calls'
arguments but never a hidden one, that the student's kernel never holds the
course secret or the hidden tests' seeds, and that stderr costs at most the
visible check.

The score tests and the feedback tests share one module on purpose: the test
run spreads whole modules over its workers (``--dist loadfile``), so a batch
shared by two modules would be graded once per worker, minutes each time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from cheating_cases import CASES, CELL_SCORES, FLAGGED, SECRET, grade_batch
from nbgrader_driver import page_text, scores

from grader.integration.preprocessors import INTEGRITY_ERROR
from grader.run.graded import cell_errors, cell_scores

UNTRUSTED = "the grader cannot trust how your code got its answers"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course copy in which every cheating case was handed in and graded."""
    return grade_batch(tmp_path_factory.mktemp("cheating"))


@pytest.mark.parametrize(
    ("student", "assignment", "expected"),
    [(s, a, e) for s, a, _, e in CASES],
    ids=[case[0] for case in CASES],
)
def test_cheat_gets_a_fair_score(batch: Path, student: str, assignment: str, expected: int) -> None:
    assert scores(batch)[(assignment, student)] == (expected, 10)
    assert cell_scores(batch, assignment, student) == CELL_SCORES[student]
    assert sum(CELL_SCORES[student].values()) == expected


def test_stderr_costs_at_most_the_visible_check(batch: Path) -> None:
    score, max_score = scores(batch)[("simt", "simt-stderr")]
    assert max_score == 10
    assert score >= 8, "stderr must not cost points in the hidden tests"


def test_feedback_shows_visible_inputs_but_no_hidden_ones(batch: Path) -> None:
    text = page_text(batch / "feedback" / "simt-prints-inputs" / "simt" / "simt.html")
    # The three visible calls print their arguments; the 27 hidden calls print into the void.
    assert re.findall(r"ARGS: \d+ \d+ \d+", text) == [
        "ARGS: 5 100 32",
        "ARGS: 31 100 32",
        "ARGS: 0 1 32",
    ]
    assert "reader_blocks is wrong for a hidden input" in text
    assert "rng.integers" not in text and "BEGIN HIDDEN TESTS" not in text


def test_the_secret_never_reaches_the_students_kernel(batch: Path) -> None:
    """Hidden inputs are seeded in the grader's process; the kernel has neither secret nor seeds."""
    from grader.verdicts import api

    nb = nbformat.read(
        batch / "autograded" / "simt-prints-inputs" / "simt" / "simt.ipynb", as_version=4
    )
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "SECRET IN ENVIRONMENT: False" in text
    probe = int(re.search(r"PROBE SEED: (\d+)", text).group(1))
    os.environ[api.SECRET_VARIABLE] = SECRET
    try:
        hidden_seed = api.seed_for("probe")
    finally:
        del os.environ[api.SECRET_VARIABLE]
    assert probe != hidden_seed  # the kernel's own seeds are the visible tests' fixed ones
    # The hidden calls' arguments were never printed into the notebook: only the three visible ones.
    assert len(re.findall(r"ARGS: \d+ \d+ \d+", text)) == 3


def test_feedback_says_what_failed_not_how_it_was_tested(batch: Path) -> None:
    """The input transformer (``get_ipython()``) is refused by the source gate: the feedback
    says so with the line, and shows nothing of the hidden tests."""
    text = page_text(batch / "feedback" / "simt-disables-checks" / "simt" / "simt.html")
    assert UNTRUSTED in text and "get_ipython" in text
    assert "BEGIN HIDDEN TESTS" not in text and "rng.integers" not in text


def _needs_manual_grade(course: Path, assignment: str, student: str) -> set[str]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(assignment, student)
        return {
            grade.name
            for notebook in submission.notebooks
            for grade in notebook.grades
            if grade.needs_manual_grade
        }


@pytest.mark.parametrize("student", sorted(FLAGGED))
def test_a_source_that_could_forge_the_kernels_reports_goes_to_a_human(
    batch: Path, student: str
) -> None:
    assignment = next(a for s, a, *_ in CASES if s == student)
    errors = cell_errors(batch, assignment, student)
    untrusted = {cell for cell, error in errors.items() if UNTRUSTED in error}
    assert untrusted == FLAGGED[student]
    assert all(errors[cell].startswith(INTEGRITY_ERROR) for cell in untrusted)
    assert FLAGGED[student] <= _needs_manual_grade(batch, assignment, student)


def test_no_other_case_is_refused_by_the_source_gate(batch: Path) -> None:
    refused = {
        student
        for student, assignment, *_ in CASES
        if student not in FLAGGED
        and any(UNTRUSTED in e for e in cell_errors(batch, assignment, student).values())
    }
    assert refused == set()
