"""The grading benchmark's "partial" students really score partially, in every assignment.

``python -m grader bench`` times a synthetic class whose partial students did
only the first part of an assignment (:func:`grader.trials.bench.submission`). Its
timings and score tables mean something only if such a notebook gets that
part's points and no others. Graded here by real ``nbgrader autograde`` in a
copy of ``solutions/`` (an instructor-only test) for every assignment of the
course manifest (``demos/course.toml``), whose parts are separate problems (in
:data:`FIRST_PART`, e.g. a weighted histogram before a block maximum, a count of
each tile's survivors before the scan that places them). The bench's
``--assignments`` reads the same manifest.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import assert_all_succeeded, hand_in, make_course, run_nbgrader, scores

from demos import manifest
from grader.run.graded import cell_scores, unlike_the_rest
from grader.run.one_student import Outcome
from grader.trials.bench import assignment_names, submission
from helpers import ROOT

pytestmark = pytest.mark.slow

#: The course's assignments, from its manifest: the bench's default class list.
ASSIGNMENTS = list(manifest.course().assignments)

#: assignment -> the test cells of its first part, which the partial student did, and their points
FIRST_PART = {
    "kernel_patterns": {"pat-test-histogram": 2.0, "pat-test-histogram-how": 3.0},
    "cupy_port": {"cupy-test-affinities": 5.0},
    "multigpu": {"multi-test-split": 3.0},
    "simt": {"simt-test-reader-blocks": 2.0},
    "numba_distance": {"numba-test-kernel": 5.0},
    "profiling": {"prof-test-values": 2.0, "prof-test-syncs": 4.0},
    "cnn": {"cnn-test-params": 2.0},
    "scan_transfer": {"scan-test-count": 2.0, "scan-test-count-how": 2.0},
}


def test_the_bench_grades_the_manifests_assignments_and_each_has_a_first_part() -> None:
    """``--assignments all`` (the default) is the manifest's list; a new assignment needs its
    first part named here, or its partial students' scores would go unchecked."""
    assert assignment_names("all") == ASSIGNMENTS
    first, last = ASSIGNMENTS[0], ASSIGNMENTS[-1]
    assert assignment_names(f"{last}, {first},{last}") == [last, first]
    with pytest.raises(argparse.ArgumentTypeError, match="not an assignment of the course"):
        assignment_names("no_such_assignment")
    assert sorted(FIRST_PART) == sorted(ASSIGNMENTS)


def test_every_assignment_has_several_answer_cells() -> None:
    """A partial student is the first answer cell only: with one cell it would be a full one."""
    for assignment in manifest.course().assignments.values():
        solution = ROOT / "solutions" / assignment.name / assignment.notebook
        cells = nbformat.read(solution, as_version=4).cells
        answers = [c for c in cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert len(answers) >= 2, f"{solution.name}: a partial student needs two answer cells"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("bench-partial"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in ASSIGNMENTS]))
    for assignment in ASSIGNMENTS:
        partial = submission(root, assignment, "partial")  # the first answer cell filled in
        hand_in(root, "partial", assignment, nbformat.writes(partial))
    assert_all_succeeded(run_nbgrader(root, [["autograde", a, "partial"] for a in ASSIGNMENTS]))
    return root


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_partial_student_gets_the_first_part_only(graded: Path, assignment: str) -> None:
    first = FIRST_PART[assignment]
    assert scores(graded)[(assignment, "partial")] == (sum(first.values()), 10.0)
    assert cell_scores(graded, assignment, "partial") == {
        cell: first.get(cell, 0.0) for cell in cell_scores(graded, assignment, "partial")
    }


def test_a_score_unlike_its_kinds_comes_with_its_failing_cells(graded: Path) -> None:
    """The bench names a notebook graded unlike the rest of its kind, with its failed cells."""
    partial = Outcome("partial", "graded", 5.0, 10.0)
    same = [Outcome(f"twin{i}", "graded", 5.0, 10.0) for i in range(2)]
    assert unlike_the_rest(graded, "kernel_patterns", [*same, Outcome("x", "graded", 5.0)]) == []
    [odd] = unlike_the_rest(graded, "kernel_patterns", [*same, replace(partial, score=3.0)])
    assert odd["student"] == "partial" and odd["score"] == 3.0
    assert odd["cell_scores"]["pat-test-histogram"] == 2.0
    # the unwritten block maximum's tests failed, each with its error; the passed cells have none
    assert set(odd["errors"]) == {"pat-test-max", "pat-test-max-how"}
    assert all(": " in text for text in odd["errors"].values())
