"""grader.batch's pool without notebooks: which class goes in first, and a run that is stopped.

``prepare`` and ``grade_student`` are replaced by stand-ins that record what
the pool asks of them, so these run in a moment: that the most costly class (by
its solution's seconds in the cell-limits file) is started first, that the
outcomes still come back per class in the order given, and that once the stop
event is set nothing more starts and the finished outcomes come back.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from grader import batch
from grader.batch import Batch, Outcome, longest_first, run_classes

#: assignment -> its solution's seconds per graded cell (None: no cell-limits file)
SOLUTION_SECONDS = {
    "quick": {"q-1": 0.5, "q-2": 0.5},
    "unknown": None,
    "slow": {"s-1": 6.0, "s-2": 3.0},
    "middle": {"m-1": 4.0},
}


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Four classes of two students, one worker; what the stand-in grader was asked, in order."""
    asked: list[tuple[str, str]] = []

    def prepare(run: Batch) -> Path:
        run.work.mkdir(parents=True, exist_ok=True)
        seconds = SOLUTION_SECONDS[run.assignment]
        if seconds is not None:
            run.cell_budgets = run.work / "cell-budgets.json"
            run.cell_budgets.write_text(json.dumps({"solution_seconds": seconds, "limits": {}}))
        return run.work / "template.db"

    def grade_student(run, student, template, uid, stop=None) -> Outcome:
        asked.append((run.assignment, student))
        return Outcome(student, "graded", 1.0, 1.0, seconds=0.1)

    monkeypatch.setattr(batch, "prepare", prepare)
    monkeypatch.setattr(batch, "grade_student", grade_student)
    monkeypatch.setattr(batch, "merge", lambda run, outcome: None)
    monkeypatch.setattr(batch.cgroups, "placement", lambda: None)
    classes = [
        (Batch(tmp_path, a, tmp_path / a, workers=1, level="limits", gpu=False), ["bo", "al"])
        for a in SOLUTION_SECONDS
    ]
    return {"classes": classes, "asked": asked, "monkeypatch": monkeypatch}


def test_the_most_costly_class_goes_into_the_pool_first(pool: dict) -> None:
    results = run_classes(pool["classes"], progress=False)
    # one worker takes the notebooks in the order they were submitted
    order = list(dict.fromkeys(a for a, _ in pool["asked"]))
    assert order == ["slow", "middle", "quick", "unknown"]
    assert longest_first(pool["classes"]) == [2, 3, 0, 1]
    # each class's notebooks in the order given, and its outcomes per class as before
    assert [s for a, s in pool["asked"] if a == "slow"] == ["bo", "al"]
    assert [[o.student for o in outcomes] for outcomes in results] == [["bo", "al"]] * 4


def test_without_measured_costs_the_given_order_stands(pool: dict) -> None:
    for run, _ in pool["classes"]:
        run.cell_budgets = None
    assert longest_first(pool["classes"]) == [0, 1, 2, 3]


def test_a_stopped_run_starts_nothing_more_and_hands_back_what_was_graded(pool: dict) -> None:
    stop = threading.Event()
    asked = pool["asked"]

    def grade_student(run, student, template, uid, stop_given=None) -> Outcome:
        assert stop_given is stop  # the notebook in flight can be ended by it
        asked.append((run.assignment, student))
        if len(asked) < 3:
            return Outcome(student, "graded", 1.0, 1.0)
        stop.set()  # the third is in flight when the run is stopped
        return Outcome(student, "stopped")

    pool["monkeypatch"].setattr(batch, "grade_student", grade_student)
    results = run_classes(pool["classes"], progress=False, stop=stop)
    assert len(asked) == 3, asked  # nothing started after the stop
    # slow's two were graded; middle's first was stopped in flight and is not listed
    assert [[o.student for o in outcomes] for outcomes in results] == [[], [], ["bo", "al"], []]
    summary = json.loads((pool["classes"][3][0].work / "summary.json").read_text())
    assert summary == []
    # stopped before it began: not even the solutions are run
    assert run_classes(pool["classes"], progress=False, stop=stop) == [[], [], [], []]
    assert len(asked) == 3
