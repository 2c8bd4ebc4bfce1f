"""grader.intake.screen: student code scanned before grading, a submission against the gradebook.

The check of a submission also runs against a gradebook made by ``nbgrader
generate_assignment`` for every assignment: honest notebooks get no flag, a
changed given cell and the student's own forbidden code do.
"""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    ASSIGNMENTS,
    NEW_ASSIGNMENTS,
    assert_all_succeeded,
    make_course,
    run_nbgrader,
)

from grader.intake.screen import scan_code, screen_submission
from helpers import ROOT


@pytest.mark.parametrize(
    "code, reason",
    [
        ("get_ipython().input_transformers_post.append(lambda lines: [])", "input transformers"),
        ("ip = globals()['get_' + 'ipython']()", "get_ipython"),
        (
            "exec(__import__('base64').b64decode("
            f"'{base64.b64encode(b'import nbgrader').decode()}'))",
            "nbgrader",
        ),
        ("import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None", "np.testing"),
        ("import numpy\nnumpy.testing.assert_array_equal = print", "numpy.testing"),
        ("import sys\nsys.modules['numpy'] = None", "sys.modules"),
        ("open('../../../solutions/simt/simt.ipynb').read()", "outside the submission"),
        (
            "from pathlib import Path\nimport demos\nPath(demos.__file__).parents[1] / 'solutions'",
            "solutions",
        ),
        ("import os\nos.kill(os.getppid(), 9)", "signals"),
        ("import subprocess\nsubprocess.Popen(['sleep', '9'])", "subprocess"),
        ("from demos.simt import blocks_for", "demos.simt"),
        ("from demos import distance\nd = distance.generic.distance_matrix", "demos.distance"),
        ("import demos.demo_numba_gpu as g", "demos.demo_numba_gpu"),
        ("from demos.cnn.model import build_model", "demos.cnn"),
        ("import importlib\nm = importlib.import_module('demos.' + 'simt')", "importlib"),
    ],
)
def test_screen_flags_code_that_reaches_into_grading(code: str, reason: str) -> None:
    reasons = scan_code(code)
    assert reasons, code
    assert any(reason.split(".")[0].lower() in r.lower() or reason in r for r in reasons), reasons


def test_screen_accepts_honest_code() -> None:
    code = (
        "import numpy as np\nfrom numba import cuda\nfrom demos import grading\n"
        "from demos.grading import array_module\nxp = grading.array_module()\n"
        "def add(a, b):\n    return a + b\n"
    )
    assert scan_code(code) == []


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_no_false_alarms_on_the_course_notebooks(folder: str) -> None:
    """The instructor's solutions and the blank exercises pass the code scan."""
    for path in sorted((ROOT / folder).glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("solution"):
                assert scan_code(cell.source) == [], (path.name, cell.source[:200])


def _gradebook(path: Path) -> Path:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{path}") as gb:
        for assignment, ids in (("simt", ["a1", "a2"]), ("cnn", ["b1"])):
            gb.add_assignment(assignment)
            gb.add_notebook(assignment, assignment)
            for grade_id in ids:
                gb.add_grade_cell(grade_id, assignment, assignment, max_score=1, cell_type="code")
    return path


def _notebook(folder: Path, name: str, ids: list[str], code: str = "x = 1") -> Path:
    cells = [
        nbformat.v4.new_code_cell(
            code,
            metadata={
                "nbgrader": {"grade_id": grade_id, "grade": True, "solution": True, "points": 1}
            },
        )
        for grade_id in ids
    ]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / name)
    return folder / name


def test_screen_submission_flags_and_repairs(tmp_path: Path) -> None:
    from grader.intake.screen import screen_submission

    db = _gradebook(tmp_path / "gradebook.db")
    wrong = tmp_path / "wrong"
    _notebook(wrong, "simt.ipynb", ["b1"])
    assert any("looks like assignment cnn" in f for f in screen_submission(wrong, "simt", db))

    partial = tmp_path / "partial"
    _notebook(partial, "simt.ipynb", ["a1"], code="from demos.simt import blocks_for")
    flags = screen_submission(partial, "simt", db)
    assert "missing grade ids ['a2']" in flags
    assert any("demos.simt" in f for f in flags)

    split = tmp_path / "split"
    path = _notebook(split, "simt-1.ipynb", ["a1", "a1", "a2"])
    flags = screen_submission(split, "simt", db, repair=True)
    assert any("renamed notebook simt-1.ipynb" in f for f in flags)
    assert any("duplicated grade ids ['a1']" in f for f in flags)
    repaired = nbformat.read(split / "simt.ipynb", as_version=4)
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in repaired.cells] == [
        "a1",
        None,
        "a2",
    ]
    assert not path.exists()
    assert screen_submission(tmp_path / "nothing", "simt", db) == ["missing notebook simt.ipynb"]


ALL_ASSIGNMENTS = [*ASSIGNMENTS, *NEW_ASSIGNMENTS]


@pytest.fixture(scope="module")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gradebook ``nbgrader generate_assignment`` makes for every assignment (once)."""
    root = make_course(tmp_path_factory.mktemp("check"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in ALL_ASSIGNMENTS]))
    return root / "gradebook.db"


def _read(folder: str, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / folder / assignment / f"{assignment}.ipynb", as_version=4)


def _grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _index(nb: nbformat.NotebookNode, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)


def _worked(assignment: str) -> nbformat.NotebookNode:
    """What an honest student hands in: the release, answered, run, with cells of their own.

    The answers are the instructor's without the solution markers; the given
    cells come back from an editor with a final newline added, every code cell
    has run, and the student added a note and a cell of their own.
    """
    nb = _read("exercises", assignment)
    answers = {_grade_id(c): c.source for c in _read("solutions", assignment).cells if _grade_id(c)}
    for count, cell in enumerate(nb.cells, 1):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = answers[meta["grade_id"]].splitlines()
            cell.source = "\n".join(line for line in lines if " SOLUTION" not in line)
        elif meta.get("grade_id"):
            cell.source = cell.source.rstrip() + "\n"
        if cell.cell_type == "code":
            cell.execution_count = count
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ok\n")]
    own = nbformat.v4.new_code_cell(
        "import numpy as np\nfrom demos import grading\n\nprint(np.__version__, grading.rng('x'))"
    )
    nb.cells[2:2] = [nbformat.v4.new_markdown_cell("My notes: try a smaller block."), own]
    return nb


def _submit(tmp_path: Path, assignment: str, nb: nbformat.NotebookNode) -> Path:
    folder = tmp_path / "submitted" / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")
    return folder


def _flags(tmp_path: Path, nb: nbformat.NotebookNode, template_db: Path) -> list[str]:
    """The check's flags for *nb* handed in as kernel_patterns."""
    return screen_submission(
        _submit(tmp_path, "kernel_patterns", nb), "kernel_patterns", template_db
    )


def test_every_assignment_is_checked() -> None:
    assert sorted(ALL_ASSIGNMENTS) == sorted(p.name for p in (ROOT / "solutions").iterdir())


@pytest.mark.parametrize("handed_in", ["solution", "blank", "worked"])
@pytest.mark.parametrize("assignment", ALL_ASSIGNMENTS)
def test_honest_submission_has_no_flags(
    template_db: Path, tmp_path: Path, assignment: str, handed_in: str
) -> None:
    """The instructor's notebook, the release unchanged and a student's own answers: no flag.

    The given cells (set-up cells that import course helpers, the tests) are
    compared with the release, not read as the student's code.
    """
    nb = {
        "solution": lambda: _read("solutions", assignment),
        "blank": lambda: _read("exercises", assignment),
        "worked": lambda: _worked(assignment),
    }[handed_in]()
    assert screen_submission(_submit(tmp_path, assignment, nb), assignment, template_db) == []


@pytest.mark.parametrize(
    "grade_id, edit",
    [
        ("pat-setup", lambda source: source + "\nimport subprocess"),  # a locked code cell
        ("pat-test-max", lambda source: "pass"),  # an autograder test
        ("pat-task1", lambda source: source.replace("5 points", "50 points")),  # a task text
    ],
)
def test_changed_given_cell_is_flagged(
    template_db: Path, tmp_path: Path, grade_id: str, edit
) -> None:
    """A changed given cell is one flag: nbgrader grades the released source, never this code."""
    nb = _read("solutions", "kernel_patterns")
    index = _index(nb, grade_id)
    nb.cells[index].source = edit(nb.cells[index].source)
    flags = _flags(tmp_path, nb, template_db)
    assert flags == [f"cell {index + 1} (grade id {grade_id}) given by the assignment was changed"]


def test_deleted_given_cell_is_flagged(template_db: Path, tmp_path: Path) -> None:
    nb = _read("exercises", "kernel_patterns")
    del nb.cells[_index(nb, "pat-setup")]
    flags = _flags(tmp_path, nb, template_db)
    assert flags == ["missing grade ids ['pat-setup']"]


def test_forbidden_import_in_the_students_own_cell_is_flagged(
    template_db: Path, tmp_path: Path
) -> None:
    """The set-up cell may import course helpers; a cell the student adds may not."""
    nb = _read("solutions", "kernel_patterns")
    nb.cells.insert(3, nbformat.v4.new_code_cell("from demos.patterns.bench import event_ms"))
    flags = _flags(tmp_path, nb, template_db)
    assert flags == ["cell 4: imports demos.patterns.bench from the course package"]


def test_answer_cells_are_scanned_whatever_their_metadata_says(
    template_db: Path, tmp_path: Path
) -> None:
    """Which cells are answers comes from the gradebook: unmarking one does not hide it."""
    nb = _read("solutions", "kernel_patterns")
    index = _index(nb, "pat-max")
    nb.cells[index].source = "from demos.patterns.kernels import tree_sum_kernel\n"
    nb.cells[index].metadata["nbgrader"]["solution"] = False
    flags = _flags(tmp_path, nb, template_db)
    assert flags == [f"cell {index + 1}: imports demos.patterns.kernels from the course package"]


def test_later_copy_of_a_given_cell_is_scanned(template_db: Path, tmp_path: Path) -> None:
    """A later copy of a given cell runs as the student's code once repaired, so it is read."""
    nb = _read("exercises", "kernel_patterns")
    index = _index(nb, "pat-setup")
    copy = nbformat.from_dict(nb.cells[index])
    copy.id, copy.source = "split-copy", "import subprocess"
    nb.cells.insert(index + 1, copy)
    flags = _flags(tmp_path, nb, template_db)
    assert flags == [
        f"cell {index + 2}: imports subprocess",
        f"cell {index + 2}: starts processes",
        "duplicated grade ids ['pat-setup'] (a split cell?): later copies graded as plain cells",
    ]


def test_every_subpackage_of_the_course_package_is_named_but_grading() -> None:
    """Why: the list of the course package's modules was typed in and missed the newer chapters'
    subpackages; it is read from the package, so a new one is covered the day it is added."""
    import pkgutil

    import demos
    from grader.intake.screen import ALLOWED_DEMOS

    for module in pkgutil.iter_modules(demos.__path__):
        name = f"demos.{module.name}"
        if module.name.startswith("_") or name in ALLOWED_DEMOS:
            continue
        hidden = f"m = __import__('{name}')"  # a string, not an import statement
        assert "refers to the course package's own answers" in scan_code(hidden), name
    assert not any("own answers" in r for r in scan_code("x = 'demos.grading'"))
