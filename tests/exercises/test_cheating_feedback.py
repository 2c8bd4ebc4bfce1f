"""What a cheating submission's feedback and kernel see: no hidden input, no secret.

A case that prints what it is given, one that disables the checks with an
IPython input transformer and one that writes to stderr, all graded in the
session's ``batch`` (tests/exercises/conftest.py, cases in tests/cheating_cases.py):
the feedback may show the visible calls' arguments but never a hidden one, the
student's kernel never holds the course secret or the hidden tests' seeds, and
stderr costs at most the visible check.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from cheating_cases import SECRET
from nbgrader_driver import page_text, scores

pytestmark = pytest.mark.slow


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
    """The input transformer changed nothing the grader decides; its part fails with a sentence."""
    text = page_text(batch / "feedback" / "simt-disables-checks" / "simt" / "simt.html")
    assert "reader_blocks is wrong for a hidden input" in text
    assert "BEGIN HIDDEN TESTS" not in text and "rng.integers" not in text
