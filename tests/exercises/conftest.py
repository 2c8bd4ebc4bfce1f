"""The cheating submissions' nbgrader batch, shared by the test modules that read it.

Grading every case takes minutes, so it runs once per test session, whichever of
tests/exercises/test_cheating_scores.py and test_cheating_feedback.py asks first
(the cases and the grading are in tests/cheating_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cheating_cases import grade_batch


@pytest.fixture(scope="session")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course copy in which every cheating case was handed in and graded."""
    return grade_batch(tmp_path_factory.mktemp("cheating"))
