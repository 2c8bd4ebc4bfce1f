"""The instructor's workflow, end to end, on a throw-away copy of the course.

Generate every assignment from ``solutions/``, hand in the instructor's
solutions as student "alice" and the untouched released notebooks as "bob",
autograde, and read the scores from nbgrader's gradebook: alice must get full
marks and bob nothing. Then the feedback must not give the hidden tests away.
Without a GPU this grades with NumPy and Numba's CUDA simulator.

The helpers (a copy of the course, nbgrader's Python API in a subprocess) live
in ``nbgrader_driver.py``, shared with the other grading tests.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from nbgrader_driver import (
    ASSIGNMENTS,
    assert_all_succeeded,
    hand_in,
    make_course,
    nbgrader_env,
    page_text,
    run_nbgrader,
    scores,
)

from helpers import ROOT

# Test ids must not be bare marker names (conftest skips anything with a "multigpu" keyword).
ASSIGNMENT_IDS = [f"assignment-{a}" for a in ASSIGNMENTS]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("nbgrader"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in ASSIGNMENTS]))
    for assignment in ASSIGNMENTS:
        hand_in(root, "alice", assignment, root / "solutions" / assignment / f"{assignment}.ipynb")
        hand_in(root, "bob", assignment, root / "exercises" / assignment / f"{assignment}.ipynb")
    steps = [["autograde", a, s] for a in ASSIGNMENTS for s in ("alice", "bob")]
    steps += [["generate_feedback", a] for a in ASSIGNMENTS]
    assert_all_succeeded(run_nbgrader(root, steps))
    return root


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=ASSIGNMENT_IDS)
def test_solution_gets_full_marks(graded: Path, assignment: str) -> None:
    score, max_score = scores(graded)[(assignment, "alice")]
    assert max_score >= 10
    assert score == max_score


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=ASSIGNMENT_IDS)
def test_blank_exercise_gets_zero(graded: Path, assignment: str) -> None:
    score, max_score = scores(graded)[(assignment, "bob")]
    assert max_score >= 10
    assert score == 0


def test_every_assignment_has_visible_and_hidden_tests() -> None:
    import nbformat

    for assignment in ASSIGNMENTS:
        nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
        graded_cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert graded_cells, assignment
        assert all(c.metadata["nbgrader"]["points"] > 0 for c in graded_cells)
        assert all("### BEGIN HIDDEN TESTS" in c.source for c in graded_cells), assignment
        # visible tests: something before the hidden region
        assert all(c.source.split("### BEGIN HIDDEN TESTS")[0].strip() for c in graded_cells), (
            assignment
        )


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=ASSIGNMENT_IDS)
def test_feedback_hides_the_hidden_tests(graded: Path, assignment: str) -> None:
    import nbformat

    source = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    hidden_lines = {
        line.strip()
        for cell in source.cells
        if "### BEGIN HIDDEN TESTS" in cell.source
        for line in cell.source.split("### BEGIN HIDDEN TESTS")[1]
        .split("### END HIDDEN TESTS")[0]
        .splitlines()
        if len(line.strip()) > 20
    }
    # lines that also occur outside the hidden regions are no secret
    elsewhere = "\n".join(
        re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", cell.source, flags=re.S)
        for cell in source.cells
    )
    hidden_lines = {line for line in hidden_lines if line not in elsewhere}
    visible_line = next(
        line.strip()
        for cell in source.cells
        if "### BEGIN HIDDEN TESTS" in cell.source
        for line in cell.source.split("### BEGIN HIDDEN TESTS")[0].splitlines()
        if len(line.strip()) > 20
    )
    assert hidden_lines
    for student in ("alice", "bob"):
        page = graded / "feedback" / student / assignment / f"{assignment}.html"
        assert page.is_file(), page
        text = page_text(page)
        assert visible_line in text, "the check below would not see source code in the page"
        leaked = [line for line in hidden_lines if line in text]
        assert not leaked, f"{student}'s feedback shows hidden tests: {leaked[:3]}"


def test_zip_collect_and_export_commands(graded: Path) -> None:
    """The README's command-line steps 2 and 5: file handed-in notebooks, export the grades."""
    import csv

    archive = graded / "downloaded" / "simt" / "archive"
    archive.mkdir(parents=True)
    shutil.copy2(graded / "solutions" / "simt" / "simt.ipynb", archive / "carl_simt.ipynb")
    for command in (["zip_collect", "simt"], ["export", "--to", "grades.csv"]):
        proc = subprocess.run(
            ["nbgrader", *command],  # found on nbgrader_env()'s PATH
            cwd=graded,
            env=nbgrader_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, (
            f"nbgrader {command}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    assert (graded / "submitted" / "carl" / "simt" / "simt.ipynb").is_file()
    with open(graded / "grades.csv", newline="") as f:
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(f)}
    for assignment in ASSIGNMENTS:
        alice, bob = rows[(assignment, "alice")], rows[(assignment, "bob")]
        assert float(alice["raw_score"]) == float(alice["max_score"]) > 0, alice
        assert float(bob["raw_score"]) == 0, bob


@pytest.mark.gpu
def test_gpu_grader_used_the_gpu(graded: Path) -> None:
    """On a GPU machine the notebooks were graded on the GPU, not in the simulator."""
    import nbformat

    nb = nbformat.read(graded / "autograded" / "alice" / "simt" / "simt.ipynb", as_version=4)
    setup = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "simt-setup"
    )
    text = "".join(o.get("text", "") for o in setup.outputs)
    assert "CUDA simulator: False" in text, text
