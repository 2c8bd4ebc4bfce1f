"""``python -m grader selftest``: the check that each assignment grades as it should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nbgrader_driver import run_grader

from helpers import ROOT

pytestmark = pytest.mark.slow


def test_selftest_grades_the_solution_full_and_the_blank_release_zero(tmp_path: Path) -> None:
    out = run_grader(ROOT, ["selftest", "simt", "--json", str(tmp_path / "scores.json")])
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["OK", "simt", "solution", "10/10", "blank", "0/10"]
    scores = json.loads((tmp_path / "scores.json").read_text())["scores"]
    assert scores == {"simt/solution": [10.0, 10.0], "simt/blank": [0.0, 10.0]}
    assert not list(ROOT.glob("submitted")), "the course folder itself is left alone"
