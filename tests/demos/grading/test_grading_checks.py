"""Unit tests of what tests are built from (demos.grading, grader.verdicts.api); grader/check.py.

The stand-in for CuPy must fail NumPy-only code the way CuPy does, hidden
seeds must reproduce (and change with the course secret, which only the
grader has), failures must be generic, and the watchers must see kernel
launches, course code and forbidden helpers. The real ``nbgrader autograde``
runs are in tests/exercises/test_cheating.py and tests/grader/verdicts/test_verdict_attacks.py.

The check before grading (grader/check.py) runs here against a gradebook made
by ``nbgrader generate_assignment``: honest notebooks of every assignment get
no flag, a changed given cell and the student's own forbidden code do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbgrader_driver import (
    ASSIGNMENTS,
    NEW_ASSIGNMENTS,
    assert_all_succeeded,
    make_course,
    run_nbgrader,
)
from numba import cuda

from demos import grading
from demos.grading import standin
from grader.check import check_submission
from grader.verdicts import api
from helpers import ROOT

xp = standin.module


# --- the CuPy-like stand-in -------------------------------------------------------------
def test_standin_arrays_are_not_numpy_arrays() -> None:
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    assert not isinstance(a, np.ndarray) and isinstance(a, xp.ndarray)
    assert grading.get_array_module(a) is xp and grading.get_array_module(np.ones(2)) is np
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(grading.to_numpy(a.T), np.arange(6.0).reshape(2, 3).T)


def test_standin_refuses_implicit_conversion_like_cupy() -> None:
    a = xp.asarray(np.ones((2, 2)))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    host = np.empty((2, 2))
    with pytest.raises(TypeError):
        host[:] = a
    with pytest.raises(TypeError, match="mixed"):
        a + np.ones((2, 2))


def test_numpy_functions_dispatch_to_the_standin_like_cupy() -> None:
    x = xp.asarray(np.arange(6.0).reshape(3, 2))
    norms = np.einsum("ij,ij->i", x, x)  # CuPy's __array_function__ does the same
    assert isinstance(norms, xp.ndarray)
    np.testing.assert_allclose(norms.get(), [1.0, 13.0, 41.0])
    assert isinstance(np.sin(x), xp.ndarray) and isinstance(x @ x.T, xp.ndarray)
    total = xp.sum(x)
    assert isinstance(total, xp.ndarray) and float(total) == 15.0  # 0-d, like CuPy
    out = xp.empty((3, 2), dtype=xp.result_type(x, x))
    out[0:2] = x[0:2]
    out[2] = np.array([7.0, 8.0])  # host data into a device array is a copy, as in CuPy
    np.testing.assert_array_equal(out.get()[2], [7.0, 8.0])


# --- seeds and failures of the hidden tests (grader.verdicts.api, in the grader's process) ---
def test_seeds_reproduce_and_differ_per_test() -> None:
    assert api.seed_for("a") == api.seed_for("a") != api.seed_for("b")
    assert grading.seed_for("a") == grading.seed_for("a") != api.seed_for("a")


def test_secret_changes_the_hidden_seeds_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(api.SECRET_VARIABLE, raising=False)
    default, visible = api.seed_for("simt-kernel"), grading.seed_for("simt-kernel")
    monkeypatch.setenv(api.SECRET_VARIABLE, "course secret")
    secret = api.seed_for("simt-kernel")
    assert secret != default and grading.seed_for("simt-kernel") == visible
    monkeypatch.setenv(api.SECRET_VARIABLE, "another secret")
    assert api.seed_for("simt-kernel") not in (default, secret)


def test_the_kernel_never_has_the_secret(tmp_path: Path) -> None:
    """The sandbox's kernel launcher drops it before the kernel starts; demos never reads it."""
    launcher = (ROOT / "grader" / "sandbox_kernel.py").read_text()
    assert "os.environ.pop(SECRET_VARIABLE" in launcher
    assert "COURSE_GRADING_SECRET" not in "".join(
        p.read_text() for p in (ROOT / "demos").rglob("*.py")
    )


def test_hidden_test_turns_errors_into_one_generic_message() -> None:
    generic = r"^saxpy fails for a hidden input \(IndexError\)[^0-9]*$"
    with pytest.raises(api.GradingFailure, match=generic), api.hidden_test("t", "saxpy"):
        raise IndexError("index 4242 is out of bounds")
    with (
        pytest.raises(api.GradingFailure, match="^a course message$"),
        api.hidden_test("t", "saxpy"),
    ):
        api.check(False, "a course message")


def test_assert_close_is_generic_and_strict() -> None:
    api.assert_close(np.array([1.0, np.nan]), np.array([1.0 + 1e-9, np.nan]), "x", rtol=1e-6)
    with pytest.raises(api.GradingFailure, match="^the matrix is wrong for a hidden input$"):
        api.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.1]), "the matrix")
    with pytest.raises(api.GradingFailure, match="wrong shape"):
        api.assert_close(np.ones(3), np.ones(4), "the matrix")
    with pytest.raises(api.GradingFailure):
        api.assert_close(np.array([np.nan]), np.array([1.0]), "the matrix")


def test_numba_performance_warnings_are_silenced_once_a_test_asks_for_inputs() -> None:
    # not at import: the grader's own process imports demos.grading.wire
    code = (
        "import warnings, demos.grading\n"
        "demos.grading.rng('a visible test')\n"
        "from numba.core.errors import NumbaPerformanceWarning\n"
        "warnings.warn(NumbaPerformanceWarning("
        "'Grid size 1 will likely result in GPU under-utilization'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == ""


# --- own work ------------------------------------------------------------------------------
@cuda.jit
def _fill(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = i


def test_watch_records_launches_course_code_and_forbidden_calls() -> None:
    from demos import simt

    out = np.zeros(10)
    with grading.watch(forbidden=(np.array_split,)) as seen:
        _fill[2, 8](out)
        simt.blocks_for(10, 8)
        np.array_split(out, 3)
        np.concatenate([out, out])
    assert [(launch.kernel, launch.grid, launch.block) for launch in seen.launches] == [
        (_fill, (2, 1, 1), (8, 1, 1))
    ]
    assert seen.launches[0].threads == (16, 1, 1)
    assert "demos.simt.blocks_for" in seen.course_calls
    assert seen.forbidden_calls == ["array_split"]
    np.testing.assert_array_equal(out, np.arange(10))


def test_course_code_is_recognised() -> None:
    from demos import demo_numba_gpu, simt
    from demos.distance import generic

    assert grading.is_course_code(simt.blocks_for)
    assert grading.is_course_code(generic.distance_matrix)
    assert grading.is_course_code(demo_numba_gpu.distance_matrix)  # a kernel
    assert not grading.is_course_code(_fill)
    assert not grading.is_course_code(lambda: None)
    assert not grading.is_course_code(grading.check)  # the grading helpers are not "the answer"


def test_guard_band_sees_writes_outside_the_output() -> None:
    guarded = grading.GuardedOutput((4, 5), pad=2)
    assert guarded.inner.shape == (4, 5)
    assert guarded.canaries_intact()
    np.testing.assert_array_equal(guarded.values(), np.full((4, 5), guarded.CANARY))
    _fill_rows[1, 4](guarded.inner)
    assert guarded.canaries_intact()
    np.testing.assert_array_equal(guarded.values()[:, 0], np.arange(4))
    guarded.device[0, 0] = 1.0  # outside the real region
    assert not guarded.canaries_intact()


@cuda.jit
def _fill_rows(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = i


# --- devices --------------------------------------------------------------------------------
def test_device_log_tells_overlap_from_waiting() -> None:
    devs = grading.devices(3)
    assert len(devs) == 3 and len({id(d.log) for d in devs}) == 1
    on = []
    for d in devs:
        with d:
            on.append(d.asarray(np.ones(2)))
    [d.asnumpy(a) for d, a in zip(devs, on)]
    assert devs[0].log.started_all_before_waiting()

    serial = grading.devices(3)
    for d in serial:
        with d:
            d.asnumpy(d.asarray(np.ones(2)))
    assert not serial[0].log.started_all_before_waiting()


# --- the stand-in behaves like CuPy where grading depends on it -------------------------------
_CUPY_BEHAVIOUR = {
    # what NumPy-only student code does with a GPU array, and what CuPy answers
    "np.asarray": (lambda xp, a: np.asarray(a), "TypeError"),
    "np.einsum": (lambda xp, a: np.einsum("ij,ij->i", a, a), "device array"),
    "np.concatenate": (lambda xp, a: np.concatenate([a, a]), "device array"),
    "np.sin": (lambda xp, a: np.sin(a), "device array"),
    "store into a NumPy array": (
        lambda xp, a: np.empty(a.shape).__setitem__(slice(None), a),
        "TypeError",
    ),
    "store NumPy into it": (
        lambda xp, a: a.__setitem__(slice(None), np.ones(a.shape)),
        "ValueError",
    ),
    "add a NumPy array": (lambda xp, a: a + np.ones(a.shape), "TypeError"),
    "add a scalar": (lambda xp, a: a + 1.0, "device array"),
    "float of a sum": (lambda xp, a: float(xp.sum(a)), "float"),
    "matmul": (lambda xp, a: a @ a.T, "device array"),
    "get": (lambda xp, a: a.get(), "ndarray"),
}


def _behaviour(xp, case) -> str:
    try:
        result = case(xp, xp.asarray(np.arange(6.0).reshape(3, 2)))
    except (TypeError, ValueError) as error:
        return type(error).__name__
    return "device array" if isinstance(result, xp.ndarray) else type(result).__name__


@pytest.mark.parametrize("name", sorted(_CUPY_BEHAVIOUR))
def test_standin_answers_as_cupy_does(name: str, device_xp) -> None:
    """The stand-in answers as the table says; on a GPU, so does CuPy (the table is true)."""
    case, expected = _CUPY_BEHAVIOUR[name]
    assert _behaviour(device_xp, case) == expected


# --- the check before grading (grader/check.py) ------------------------------------------
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
    return check_submission(
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
    assert check_submission(_submit(tmp_path, assignment, nb), assignment, template_db) == []


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
