"""Per-cell time limits from the solution's own run (grader.integration.cell_budgets)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from grader.integration import cell_budgets
from grader.integration.preprocessors import GuardedExecute


def _cell(source: str, grade_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade_id": grade_id,
        "solution": True,
        "grade": False,
        "locked": False,
    }
    return cell


def test_budget_has_a_floor_a_factor_and_the_course_timeout_as_ceiling() -> None:
    assert cell_budgets.budget(0.01, 60) == cell_budgets.FLOOR_SECONDS
    assert cell_budgets.budget(5.0, 60) == cell_budgets.FACTOR * 5 + cell_budgets.SLACK_SECONDS
    assert cell_budgets.budget(30.0, 60) == 60


def test_the_solution_is_timed_cell_by_cell_without_its_hidden_tests(tmp_path: Path) -> None:
    course = tmp_path / "course"
    solution = course / "solutions" / "demo" / "demo.ipynb"
    solution.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("import time\ntime.sleep(0.3)", "slow"),
        _cell(
            "x = 1\n### BEGIN HIDDEN TESTS\nraise SystemExit('hidden tests must not run')\n"
            "### END HIDDEN TESTS",
            "quick",
        ),
    ]
    nbformat.write(nb, solution)
    path = cell_budgets.budgets_file(course, "demo", tmp_path, timeout=60)
    assert path is not None
    recorded = json.loads(path.read_text())
    assert 0.3 <= recorded["solution_seconds"]["slow"] < 5
    assert recorded["solution_seconds"]["quick"] < 1
    assert recorded["limits"] == {
        "slow": cell_budgets.FLOOR_SECONDS,
        "quick": cell_budgets.FLOOR_SECONDS,
    }
    assert cell_budgets.budgets_file(course, "demo", tmp_path, timeout=60) == path  # cached


def test_the_grader_gives_each_cell_its_limit(tmp_path: Path) -> None:
    limits = tmp_path / "limits.json"
    limits.write_text(
        json.dumps({"solution_seconds": {"a": 1, "b": 3, "c": 6}, "limits": {"a": 17, "b": 23}})
    )
    execute = GuardedExecute(cell_budgets=str(limits), timeout=60)
    execute.preprocess(nbformat.v4.new_notebook(), {"metadata": {"path": str(tmp_path)}})
    assert execute.timeout_func(_cell("", "a")) == 17
    assert execute.timeout_func(nbformat.v4.new_code_cell("")) == 23  # the student's own cell
