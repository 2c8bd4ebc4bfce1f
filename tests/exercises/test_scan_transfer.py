"""Real ``nbgrader autograde`` of the ``scan_transfer`` assignment (stream compaction), on CPU.

The solution gets full marks, the blank release nothing, two other right answers
full marks. Typical mistakes lose the part they break (``>=`` for ``>``, an
inclusive rank as the place, unset shared flags, a scan that reads every earlier
flag, a count by one thread); cheats the CUDA simulator would pass (NumPy inside
a kernel, an atomic counter, a chain without barriers, hard-coded answers) get
nothing for their kernel. The hidden tests run every kernel in the grader's own
simulator, so a GPU grader gives the same scores. The quick tests show, without
nbgrader, that the counted launches (:mod:`demos.grading.compaction`) see each fault.
The submissions themselves are in tests/scan_transfer_cases.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbgrader_driver import assert_all_succeeded, hand_in, make_course, run_nbgrader, scores
from scan_transfer_cases import CASES

from demos.grading.compaction import (
    compact_report,
    count_report,
    exclusive_offsets,
    expected_counts,
    readings,
)
from grader.sandbox.flags import FLAGS_ENV
from helpers import ROOT

ASSIGNMENT = "scan_transfer"


def _with_cells(source: Path, replacements: dict[str, str]) -> str:
    nb = nbformat.read(source, as_version=4)
    found = set()
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in replacements:
            cell.source = replacements[grade_id]
            found.add(grade_id)
    assert found == set(replacements), (
        "the solution's answer cells are not the ones this test knows"
    )
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def solution_names() -> dict:
    """The solution's set-up cell and kernels, run here (the kernels in the CUDA simulator)."""
    nb = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    cells = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells}
    names: dict = {}
    for grade_id in ("scan-setup", "scan-count", "scan-compact"):
        exec(compile(cells[grade_id], grade_id, "exec"), names)  # noqa: S102  (the course's own)
    return names


def _report(names: dict, replaced: dict[str, str], kind: str) -> dict:
    """The counted launch of *kind* of the solution with *replaced* cells, on 2 blocks."""
    names = dict(names)
    for source in replaced.values():
        exec(compile(source, "case", "exec"), names)  # noqa: S102  (the test's own cases)
    block, threshold = names["BLOCK"], names["THRESHOLD"]
    values = readings(np.random.default_rng(7), block + 37, threshold, 0.5, ties=False)
    if kind == "count":
        return count_report(names["count_kernel"], values, threads=block)
    offsets = exclusive_offsets(expected_counts(values, threshold, block))
    return compact_report(names["compact_kernel"], values, offsets, threshold, threads=block)


#: case -> (report, field, what a right kernel has there): the field that gives the case away
GIVEAWAY = {
    "atomic-counter": ("compact", "atomics", 0),
    "racy-chain": ("compact", "racy_shared_reads", 0),
    "inclusive": ("compact", "outputs_written_by_another_thread", 0),
    "one-thread-count": ("count", "values_read_by_another_thread", 0),
    "unset-padding": ("count", "uninitialised_shared_reads", 0),
}


@pytest.mark.parametrize("case", sorted(GIVEAWAY))
def test_the_reports_see_what_a_gpu_would_get_wrong(solution_names: dict, case: str) -> None:
    """Each fault shows in its report's field, where the solution's kernels have the right value."""
    kind, field, right = GIVEAWAY[case]
    assert _report(solution_names, {}, kind)[field] == right
    try:
        report = _report(solution_names, CASES[case][0], kind)
    except IndexError:
        # The simulator's threads take turns in no fixed order: a chain that reads a
        # neighbour's slot before it is written gets garbage and writes out of range.
        assert case == "racy-chain"
        return
    assert report[field] != right


def test_a_loop_over_the_earlier_flags_reads_too_much_shared_memory(solution_names: dict) -> None:
    block = solution_names["BLOCK"]
    assert _report(solution_names, {}, "compact")["most_shared_reads_by_a_thread"] <= block // 2
    quadratic = _report(solution_names, CASES["quadratic"][0], "compact")
    assert quadratic["most_shared_reads_by_a_thread"] > block // 2


#: Graded one at a time, each with a flags file of its own: the right answers.
ALONE = ["alice", "otherscans", "treeandvotes"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("nbgrader-scan"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))
    solution = root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    hand_in(root, "alice", ASSIGNMENT, solution)
    hand_in(root, "bob", ASSIGNMENT, root / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    for name, (cells, _, _) in CASES.items():
        hand_in(root, name.replace("-", ""), ASSIGNMENT, _with_cells(solution, cells))
    others = [p.name for p in (root / "submitted").iterdir() if p.name not in ALONE]
    for flags, students in [*((s, [s]) for s in ALONE), ("others", others)]:
        os.environ[FLAGS_ENV] = str(root / f"flags-{flags}.jsonl")
        try:
            steps = [["autograde", ASSIGNMENT, s] for s in students]
            assert_all_succeeded(run_nbgrader(root, steps))
        finally:
            del os.environ[FLAGS_ENV]
    return root


def _flags(root: Path, student: str) -> set[str]:
    """The reasons the grader gave a human to look at *student*'s notebook."""
    path = root / f"flags-{student}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {json.loads(line)["reason"] for line in lines}


@pytest.mark.slow
def test_solution_full_marks_and_blank_zero(graded: Path) -> None:
    found = scores(graded)
    assert found[(ASSIGNMENT, "alice")] == (10.0, 10.0)
    assert found[(ASSIGNMENT, "bob")] == (0.0, 10.0)


@pytest.mark.slow
def test_only_a_kernel_shaped_like_course_code_goes_to_a_human(graded: Path) -> None:
    """The solution, a new right answer and chapter 4c's scan written as taught are not
    flagged. Chapter 4's block sum turned into a count is flagged for a look (its points
    stay): the copy check's promise."""
    assert _flags(graded, "alice") == set() and _flags(graded, "otherscans") == set()
    assert _flags(graded, "chapterscan") == set()
    assert _flags(graded, "treeandvotes") == {
        "count_kernel has the structure of code the course ships"
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_submission_scores_what_a_fair_grader_gives(graded: Path, case: str) -> None:
    _, expected, why = CASES[case]
    got = scores(graded)[(ASSIGNMENT, case.replace("-", ""))]
    assert got == (expected, 10.0), f"{case}: {why}"
