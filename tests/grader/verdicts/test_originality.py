"""The graded answers of the transfer assignments cannot be copied from the student edition.

Students get the course package, the chapters' model answers included
(``demos/checks/answers/``, printed by ``show_answer``). An assignment whose
solution is one of those files grades copying, not the skill: the
``kernel_patterns`` histogram used to share 92 % of its lines with the
chapter's ``histogram_shared``, and ``simt`` and ``numba_distance`` asked for
chapter 2's ``add_to_kernel``/``blocks_for`` and chapter 4's coalesced distance
kernel again, ``profiling`` a distance pipeline close to chapter 4a's
``sync_free_total`` and ``cnn`` chapter 5's own network. ``kernel_patterns``,
``cupy_port``, ``multigpu``, ``simt`` (heat diffusion in a rod),
``numba_distance`` (a batch of Manhattan distance matrices on a 3-D grid),
``profiling`` (alarm decisions made on the device; the peak concurrency of a
timeline and the timeline of a plan of streams and events) and ``cnn`` (a
digits network with batch normalisation and a global average pooling head,
and its parameters counted by hand) therefore ask for new problems that need
the chapters' skills.
For every solution cell of these assignments:

* no function has the structure of a function of the course package
  (:func:`grader.verdicts.originality.matches_course_code`, the check the
  grader flags copied kernels with);
* at most a third of its code lines occur in any one model answer (lines
  compared without comments and spacing; the old solutions shared 53 to 92 %).
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest
from copy_cases import COPIES_OF_HISTOGRAM, HONEST

from grader.verdicts.originality import fingerprint, matches_course_code
from helpers import ROOT

TRANSFER_ASSIGNMENTS = [
    "kernel_patterns",
    "cupy_port",
    "multigpu",
    "simt",
    "numba_distance",
    "profiling",
    "cnn",
    "scan_transfer",
]
#: The largest share of a solution's lines that one model answer may hold.
MOST_SHARED_LINES = 1 / 3


def _code_lines(source: str) -> list[str]:
    """Non-blank lines without comments, nbgrader markers or differences in spacing."""
    lines = []
    for line in source.splitlines():
        line = re.sub(r"\s+", " ", re.sub(r"#.*", "", line)).strip()
        if line:
            lines.append(line)
    return lines


def _solution_cells() -> list[tuple[str, str]]:
    """(``assignment/grade id``, source) of every solution cell of the transfer assignments."""
    cells = []
    for assignment in TRANSFER_ASSIGNMENTS:
        path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("solution"):
                cells.append((f"{assignment}/{meta['grade_id']}", cell.source))
    return cells


SOLUTIONS = _solution_cells()
MODEL_ANSWERS = sorted((ROOT / "demos" / "checks" / "answers").glob("*.py"))


def test_every_transfer_assignment_has_solution_cells() -> None:
    found = {name.split("/")[0] for name, _ in SOLUTIONS}
    assert found == set(TRANSFER_ASSIGNMENTS)
    assert len(MODEL_ANSWERS) > 10, "the chapters' model answers were not found"


@pytest.mark.parametrize(("name", "source"), SOLUTIONS, ids=[n for n, _ in SOLUTIONS])
def test_no_solution_function_is_the_course_code(name: str, source: str) -> None:
    functions = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    assert functions, f"{name} defines no function"
    for function in functions:
        text = ast.get_source_segment(source, function)
        assert not matches_course_code(text), (
            f"{name}: {function.name} has the structure of a function the course ships"
        )


@pytest.mark.parametrize(("name", "source"), SOLUTIONS, ids=[n for n, _ in SOLUTIONS])
def test_no_solution_is_mostly_a_model_answer(name: str, source: str) -> None:
    mine = _code_lines(source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""))
    for answer in MODEL_ANSWERS:
        theirs = set(_code_lines(answer.read_text()))
        shared = sum(line in theirs for line in mine) / len(mine)
        assert shared <= MOST_SHARED_LINES, (
            f"{name} shares {shared:.0%} of its lines with demos/checks/answers/{answer.name}"
        )


def test_the_check_sees_a_copied_answer() -> None:
    """The chapter's histogram answer, renamed, is caught by both checks (they can fail)."""
    answer = (ROOT / "demos" / "checks" / "answers" / "histogram_shared.py").read_text()
    copied = answer.replace("histogram_shared", "histogram_kernel").replace("local", "mine")
    assert matches_course_code(copied[copied.index("@cuda.jit") :])
    lines = _code_lines(copied)
    assert sum(line in set(_code_lines(answer)) for line in lines) / len(lines) > 0.5


def test_a_renamed_copy_of_course_code_is_recognised() -> None:
    answer = (ROOT / "demos" / "checks" / "answers" / "histogram_shared.py").read_text()
    renamed = answer.replace("local", "mine").replace("values", "vals")
    assert fingerprint(renamed) == fingerprint(answer)
    assert matches_course_code(renamed)
    assert not matches_course_code("def closest(x):\n    return x.argmin(axis=1)\n")


@pytest.mark.parametrize("how", list(COPIES_OF_HISTOGRAM))
def test_a_disguised_copy_of_a_model_answer_is_flagged(how: str) -> None:
    """Renamed, padded with no-op statements, reordered, or with new comments and layout."""
    assert matches_course_code(COPIES_OF_HISTOGRAM[how])


HONEST_ANSWERS = [
    (f"{task}/{name}", source) for task, cases in HONEST.items() for name, source in cases
]


@pytest.mark.parametrize(("name", "source"), HONEST_ANSWERS, ids=[n for n, _ in HONEST_ANSWERS])
def test_an_honest_answer_is_not_flagged(name: str, source: str) -> None:
    assert not matches_course_code(source), name


def test_a_stub_with_the_releases_signature_is_not_course_code() -> None:
    """The partial notebooks of a class: an untouched stub shares only its signature (given by
    the release) with the course's own function, and a signature is nobody's work."""
    stub = (
        "def batched_l1(a: np.ndarray, b: np.ndarray, block: tuple[int, int] = (32, 4))"
        " -> np.ndarray:\n"
        "    # YOUR CODE HERE: replace this line with your solution\n"
        '    raise NotImplementedError("this part of the exercise is not done yet")\n'
    )
    assert fingerprint(stub) is None and not matches_course_code(stub)
