"""Which notebook goes next in grader.run.batch's pool, and a run that is stopped; no notebooks.

:class:`grader.run.class_queue.ClassQueue` is tested on its own (the most costly
ready class first, a class that joins late, waiting and stopping). For
:func:`grader.run.batch.run_classes`, ``measure_limits`` and ``grade_student`` are
replaced by stand-ins that record what the pool asks of them, so these run in
a moment: a cheap class is graded while a costly solution is still being
timed, the outcomes come back per class in the order given, and once the stop
event is set nothing more starts and the finished outcomes come back.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from grader.run import batch
from grader.run.batch import Batch, Outcome, run_classes
from grader.run.class_queue import ClassQueue

#: assignment -> its solution's seconds per graded cell (None: no cell-limits file)
SOLUTION_SECONDS = {
    "quick": {"q-1": 0.5, "q-2": 0.5},
    "unknown": None,
    "slow": {"s-1": 6.0, "s-2": 3.0},
    "middle": {"m-1": 4.0},
}


def taken_in_order(queue: ClassQueue) -> list[tuple[int, str]]:
    """Take every notebook left, one at a time (each graded before the next is taken)."""
    order = []
    while (taken := queue.take()) is not None:
        order.append(taken)
        queue.done()
    return order


def test_the_most_costly_ready_class_goes_first_and_unknown_costs_last() -> None:
    queue = ClassQueue([["bo", "al"]] * 4, workers=1)
    for index, cost in enumerate([1.0, None, 9.0, 4.0]):
        queue.ready(index, cost)
    assert taken_in_order(queue) == [
        (2, "bo"), (2, "al"), (3, "bo"), (3, "al"), (0, "bo"), (0, "al"), (1, "bo"), (1, "al"),
    ]  # fmt: skip


def test_a_costly_class_that_joins_late_goes_before_what_is_left() -> None:
    queue = ClassQueue([["a", "b", "c"], ["x", "y"]], workers=2)
    queue.ready(0, 1.0)
    assert queue.take() == (0, "a")
    queue.done()
    queue.ready(1, 5.0)
    assert taken_in_order(queue) == [(1, "x"), (1, "y"), (0, "b"), (0, "c")]


def test_a_worker_waits_for_a_class_to_be_ready_and_a_stop_ends_the_wait() -> None:
    queue = ClassQueue([["solo"]], workers=1)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(queue.take()))
    waiter.start()
    waiter.join(timeout=0.3)
    assert waiter.is_alive() and not got  # nothing is ready: it waits
    queue.ready(0, None)
    waiter.join(timeout=5)
    assert got == [(0, "solo")]
    assert queue.take() is None  # every student handed out
    stop = threading.Event()
    stop.set()
    assert ClassQueue([["x"]], workers=1).take(stop) is None  # never ready, but stopped


def test_a_solution_being_timed_holds_a_worker() -> None:
    """Two workers, one class still timed: one notebook at a time until it is ready."""
    queue = ClassQueue([["a", "b"], ["x"]], workers=2)
    queue.ready(0, 1.0)
    assert queue.take() == (0, "a")
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(queue.take()))
    waiter.start()
    waiter.join(timeout=0.3)
    assert waiter.is_alive() and not got  # no room: the other worker's share times class 1
    queue.ready(1, 0.5)  # timed: that share is free
    waiter.join(timeout=5)
    assert got == [(0, "b")]
    # with a worker per class being timed, a machine of one worker times them all first
    single = ClassQueue([["a"], ["x"]], workers=1)
    single.ready(0, 1.0)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert single.take(stop) is None


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Four classes of two students, one worker; what the stand-in grader was asked, in order."""
    asked: list[tuple[str, str]] = []

    def measure_limits(run: Batch) -> None:
        seconds = SOLUTION_SECONDS[run.assignment]
        if seconds is not None:
            run.cell_budgets = run.work / "cell-budgets.json"
            run.cell_budgets.write_text(json.dumps({"solution_seconds": seconds, "limits": {}}))

    def shared_template(run: Batch) -> Path:
        run.work.mkdir(parents=True, exist_ok=True)
        return run.work / "template.db"

    def grade_student(run, student, template, uid, stop=None) -> Outcome:
        asked.append((run.assignment, student))
        return Outcome(student, "graded", 1.0, 1.0, seconds=0.1)

    monkeypatch.setattr(batch, "measure_limits", measure_limits)
    monkeypatch.setattr(batch, "shared_template", shared_template)
    monkeypatch.setattr(batch, "grade_student", grade_student)
    monkeypatch.setattr(batch, "merge", lambda run, outcome: None)
    monkeypatch.setattr(batch.cgroups, "placement", lambda: None)
    classes = [
        (Batch(tmp_path, a, tmp_path / a, workers=1, level="limits", gpu=False), ["bo", "al"])
        for a in SOLUTION_SECONDS
    ]
    return {"classes": classes, "asked": asked, "monkeypatch": monkeypatch}


def test_a_cheap_class_is_graded_while_a_costly_solution_is_still_timed(pool: dict) -> None:
    classes, asked, patch = (
        [pool["classes"][2], pool["classes"][0]],
        pool["asked"],
        pool["monkeypatch"],
    )
    for run, _ in classes:
        run.workers = 2  # one grades while the other's share times slow's solution
    quick_graded, slow_ready = threading.Event(), threading.Event()
    timed = batch.measure_limits

    def measure_limits(run: Batch) -> None:
        if run.assignment == "slow":  # its solution is timed until a quick notebook is graded
            assert quick_graded.wait(timeout=10)
        timed(run)

    def ready(self: ClassQueue, index: int, cost: float | None) -> None:
        original_ready(self, index, cost)
        if classes[index][0].assignment == "slow":
            slow_ready.set()

    def grade_student(run, student, template, uid, stop=None) -> Outcome:
        asked.append((run.assignment, student))
        if run.assignment == "quick" and not quick_graded.is_set():
            quick_graded.set()
            assert slow_ready.wait(timeout=10)
        return Outcome(student, "graded", 1.0, 1.0)

    original_ready = ClassQueue.ready
    patch.setattr(batch, "measure_limits", measure_limits)
    patch.setattr(ClassQueue, "ready", ready)
    patch.setattr(batch, "grade_student", grade_student)
    results = run_classes(classes, progress=False)
    # quick was ready at once; slow joined after quick's first and goes before what is left
    assert asked[0] == ("quick", "bo") and asked[-1] == ("quick", "al")
    assert sorted(asked[1:3]) == [("slow", "al"), ("slow", "bo")]
    # outcomes per class, in the classes' and students' order given, each with its start
    assert [[o.student for o in outcomes] for outcomes in results] == [["bo", "al"]] * 2
    assert all(o.started_seconds >= 0 for outcomes in results for o in outcomes)


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
    # the two graded ones come back under their classes; the one stopped in flight does not
    listed = {
        (run.assignment, o.student) for (run, _), r in zip(pool["classes"], results) for o in r
    }
    assert listed == set(asked[:2])
    summaries = [json.loads((run.work / "summary.json").read_text()) for run, _ in pool["classes"]]
    assert sum(len(s) for s in summaries) == 2
    # stopped before it began: not even the solutions are run
    assert run_classes(pool["classes"], progress=False, stop=stop) == [[], [], [], []]
    assert len(asked) == 3
