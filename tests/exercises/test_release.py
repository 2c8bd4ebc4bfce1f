"""``exercises/`` must be exactly what ``nbgrader generate_assignment`` makes from ``solutions/``.

Students get ``exercises/``; instructors edit ``solutions/``. If someone edits
one without regenerating the other, the released notebooks would silently
disagree with the grader's copy (checksums, hidden tests, points). This test
regenerates every assignment in a temporary copy and compares cell by cell.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import ASSIGNMENTS as GRADED_ASSIGNMENTS
from nbgrader_driver import (
    NEW_ASSIGNMENTS,
    assert_all_succeeded,
    make_course,
    run_nbgrader,
)

from helpers import ROOT

ASSIGNMENTS = GRADED_ASSIGNMENTS + NEW_ASSIGNMENTS


pytestmark = pytest.mark.slow


def cells(path: Path) -> list[tuple[str, str, dict]]:
    nb = nbformat.read(path, as_version=4)
    return [(cell.cell_type, cell.source, dict(cell.metadata)) for cell in nb.cells]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("release"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in ASSIGNMENTS]))
    return root / "exercises"


def test_released_assignments_are_the_committed_ones(regenerated: Path) -> None:
    committed = sorted(
        p.relative_to(ROOT / "exercises") for p in (ROOT / "exercises").rglob("*") if p.is_file()
    )
    made = sorted(p.relative_to(regenerated) for p in regenerated.rglob("*") if p.is_file())
    assert committed == made, "exercises/ has other files than generate_assignment makes"


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=[f"assignment-{a}" for a in ASSIGNMENTS])
def test_released_notebook_matches_generated(regenerated: Path, assignment: str) -> None:
    name = Path(assignment) / f"{assignment}.ipynb"
    committed, made = cells(ROOT / "exercises" / name), cells(regenerated / name)
    assert len(committed) == len(made), (
        f"{name}: regenerate with nbgrader generate_assignment {assignment}"
    )
    for index, (ours, theirs) in enumerate(zip(committed, made)):
        assert ours == theirs, (
            f"{name}, cell {index} differs from what nbgrader generates; run "
            f"'nbgrader generate_assignment {assignment} --force' (see README, instructors)"
        )
    assert "BEGIN SOLUTION" not in (ROOT / "exercises" / name).read_text()
    assert "HIDDEN TESTS" not in (ROOT / "exercises" / name).read_text()


def test_notebooks_have_no_outputs() -> None:
    for folder in ("solutions", "exercises"):
        for path in (ROOT / folder).rglob("*.ipynb"):
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    assert not cell.outputs and cell.execution_count is None, path
