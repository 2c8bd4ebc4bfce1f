"""grader.verdicts.api, in the grader's process: hidden seeds, generic failures, strict checks.

Hidden seeds must reproduce and change with the course secret, which only the
grader has; a failure must say nothing of the hidden input.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from demos import grading
from demos.grading import wire
from grader.verdicts import api
from helpers import ROOT


def test_checks_accept_only_real_truth_values() -> None:
    api.expect(True, "x")
    api.expect(np.bool_(True), "x")
    for fake in (1, "yes", [1], wire.Opaque("Always")):
        with pytest.raises(api.GradingFailure):
            api.expect(fake, "x")
    with pytest.raises(api.GradingFailure, match="not an array of numbers"):
        api.assert_close(wire.Opaque("Always"), np.zeros(3), "the result")


def test_seeds_reproduce_and_differ_per_test() -> None:
    assert api.seed_for("a") == api.seed_for("a") != api.seed_for("b")
    assert grading.seed_for("a") == grading.seed_for("a") != api.seed_for("a")


def test_secret_changes_the_hidden_seeds_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(api.SECRET_VARIABLE, raising=False)
    default, visible = api.seed_for("simt-kernel"), grading.seed_for("simt-kernel")
    monkeypatch.setenv(api.SECRET_VARIABLE, "course secret")
    secret = api.seed_for("simt-kernel")
    assert secret != default and grading.seed_for("simt-kernel") == visible
    monkeypatch.setenv(api.SECRET_VARIABLE, "another secret")
    assert api.seed_for("simt-kernel") not in (default, secret)


def test_the_kernel_side_never_reads_the_secret(tmp_path: Path) -> None:
    """demos (what the kernel runs) never names it; the kernel's environment is an allow-list
    without it (tests/grader/test_runner_sandbox.py starts both sandboxed processes)."""
    assert "COURSE_GRADING_SECRET" not in "".join(
        p.read_text() for p in (ROOT / "demos").rglob("*.py")
    )


def test_hidden_test_turns_errors_into_one_generic_message() -> None:
    generic = r"^saxpy fails for a hidden input \(IndexError\)[^0-9]*$"
    with pytest.raises(api.GradingFailure, match=generic), api.hidden_test("t", "saxpy"):
        raise IndexError("index 4242 is out of bounds")
    with (
        pytest.raises(api.GradingFailure, match="^a course message$"),
        api.hidden_test("t", "saxpy"),
    ):
        api.expect(False, "a course message")


def test_assert_close_is_generic_and_strict() -> None:
    api.assert_close(np.array([1.0, np.nan]), np.array([1.0 + 1e-9, np.nan]), "x", rtol=1e-6)
    with pytest.raises(api.GradingFailure, match="^the matrix is wrong for a hidden input$"):
        api.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.1]), "the matrix")
    with pytest.raises(api.GradingFailure, match="wrong shape"):
        api.assert_close(np.ones(3), np.ones(4), "the matrix")
    with pytest.raises(api.GradingFailure):
        api.assert_close(np.array([np.nan]), np.array([1.0]), "the matrix")
