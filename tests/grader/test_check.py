"""grader.check: the scan of student code before grading, and a submission against the gradebook."""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
import pytest

from grader.check import scan_code
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
def test_check_flags_code_that_reaches_into_grading(code: str, reason: str) -> None:
    reasons = scan_code(code)
    assert reasons, code
    assert any(reason.split(".")[0].lower() in r.lower() or reason in r for r in reasons), reasons


def test_check_accepts_honest_code() -> None:
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


def test_check_submission_flags_and_repairs(tmp_path: Path) -> None:
    from grader.check import check_submission

    db = _gradebook(tmp_path / "gradebook.db")
    wrong = tmp_path / "wrong"
    _notebook(wrong, "simt.ipynb", ["b1"])
    assert any("looks like assignment cnn" in f for f in check_submission(wrong, "simt", db))

    partial = tmp_path / "partial"
    _notebook(partial, "simt.ipynb", ["a1"], code="from demos.simt import blocks_for")
    flags = check_submission(partial, "simt", db)
    assert "missing grade ids ['a2']" in flags
    assert any("demos.simt" in f for f in flags)

    split = tmp_path / "split"
    path = _notebook(split, "simt-1.ipynb", ["a1", "a1", "a2"])
    flags = check_submission(split, "simt", db, repair=True)
    assert any("renamed notebook simt-1.ipynb" in f for f in flags)
    assert any("duplicated grade ids ['a1']" in f for f in flags)
    repaired = nbformat.read(split / "simt.ipynb", as_version=4)
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in repaired.cells] == [
        "a1",
        None,
        "a2",
    ]
    assert not path.exists()
    assert check_submission(tmp_path / "nothing", "simt", db) == ["missing notebook simt.ipynb"]
