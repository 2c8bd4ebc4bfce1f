"""nbgrader's logs warn only about what needs a look (restore_cells, feedback).

The modules are :mod:`grader.integration.restore_cells` and :mod:`grader.integration.feedback`.

Real ``nbgrader autograde`` on a copy of the course: the released notebook as
handed out (whose test cells lack their hidden tests, as every release does)
grades without a checksum warning, and a test cell whose visible part a student
edited is still reported and put back. Feedback is made without "Config option
display_data_priority not recognized".
"""

from __future__ import annotations

import nbformat
import pytest
from nbgrader_driver import assert_all_succeeded, hand_in, make_course, run_nbgrader

from grader.integration.restore_cells import released_as_is

pytestmark = pytest.mark.slow


def test_only_a_changed_cell_is_reported(tmp_path) -> None:
    root = make_course(tmp_path)
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", "simt"]]))
    release = root / "release" / "simt" / "simt.ipynb"
    if not release.exists():
        release = root / "exercises" / "simt" / "simt.ipynb"
    hand_in(root, "alice", "simt", release)
    tampered = nbformat.read(release, as_version=4)
    test_cell = next(
        c
        for c in tampered.cells
        if c.metadata.get("nbgrader", {}).get("grade", False)
        and not c.metadata["nbgrader"].get("solution", False)
    )
    test_cell.source += "\nprint('my own line in a test cell')"
    hand_in(root, "bob", "simt", nbformat.writes(tampered))
    results = run_nbgrader(root, [["autograde", "simt", s] for s in ("alice", "bob")])
    assert_all_succeeded(results)
    logs = {r["step"][2]: r["log"] for r in results}
    assert "checksum" not in logs["alice"], logs["alice"]
    grade_id = test_cell.metadata["nbgrader"]["grade_id"]
    assert f"Attribute 'checksum' for cell {grade_id} has changed" in logs["bob"], logs["bob"]
    (feedback,) = run_nbgrader(root, [["generate_feedback", "simt"]])
    assert feedback["success"] and "not recognized" not in feedback["log"], feedback["log"]


def test_released_as_is_compares_the_visible_part() -> None:
    source = "assert f(1) == 1\n### BEGIN HIDDEN TESTS\nassert f(2) == 2\n### END HIDDEN TESTS\n"
    assert released_as_is("assert f(1) == 1\n\n", source)
    assert not released_as_is("assert True\n", source)
    assert not released_as_is("assert f(1) == 1\n", "assert f(1) == 1\n")  # no hidden tests
