"""Classmates compared: copies are reported with their lines; honest answers, starter code not.

A small course is built in a temporary folder: the real simt release in
``exercises/simt/``, and submissions made from it by putting answers in its
solution cells. ``alice`` hands in the instructor's solution; ``bob`` her
kernel, disguised (tests/copy_cases.py), and answers of his own otherwise;
``carol`` and ``dave`` honest answers of their own; ``erin`` and ``frank``
the release as it came.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from copy_cases import DISGUISES, HONEST, disguised_heat_step

from grader.__main__ import main as grader_main
from grader.intake import similarity
from grader.verdicts import fingerprints as fp
from helpers import ROOT

READER_BLOCKS = {
    "bob": """def reader_blocks(element, n, threads_per_block):
    first = element - 1 if element > 0 else element
    last = element + 1 if element < n - 1 else element
    return sorted(set(range(first // threads_per_block, last // threads_per_block + 1)))
""",
    "carol": """def reader_blocks(element, n, threads_per_block):
    blocks = []
    for reader in range(element - 1, element + 2):
        if reader < 0 or reader >= n:
            continue
        block = reader // threads_per_block
        if block not in blocks:
            blocks.append(block)
    return sorted(blocks)
""",
    "dave": """def reader_blocks(element, n, threads_per_block):
    lo = max(element - 1, 0)
    hi = min(element + 1, n - 1)
    return list(range(lo // threads_per_block, hi // threads_per_block + 1))
""",
}


def _solution(grade_id: str) -> str:
    notebook = nbformat.read(ROOT / "solutions" / "simt" / "simt.ipynb", as_version=4)
    cell = next(
        c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    )
    return re.sub(r"(?m)^ *### (BEGIN|END) SOLUTION\n?", "", cell.source)


def _hand_in(course: Path, student: str, answers: dict[str, str], release: Path) -> None:
    notebook = nbformat.read(release, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    folder = course / "submitted" / student / "simt"
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / "simt.ipynb")


def _course(tmp_path: Path, bob_disguise: str) -> Path:
    course = tmp_path / "course"
    (course / "exercises" / "simt").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    release = course / "exercises" / "simt" / "simt.ipynb"
    release.write_bytes((ROOT / "exercises" / "simt" / "simt.ipynb").read_bytes())
    ids = ("simt-reader-blocks", "simt-kernel", "simt-launch")
    alice = {grade_id: _solution(grade_id) for grade_id in ids}
    bob = {
        "simt-reader-blocks": READER_BLOCKS["bob"],
        "simt-kernel": disguised_heat_step(alice["simt-kernel"], bob_disguise),  # copied
        "simt-launch": dict(HONEST["diffuse"])["parity"],
    }
    _hand_in(course, "alice", alice, release)
    _hand_in(course, "bob", bob, release)
    for student, kernel, launch in (
        ("carol", "branches", "new-buffer"),
        ("dave", "clamped", "while"),
    ):
        answers = {
            "simt-reader-blocks": READER_BLOCKS[student],
            "simt-kernel": dict(HONEST["heat_step"])[kernel],
            "simt-launch": dict(HONEST["diffuse"])[launch],
        }
        _hand_in(course, student, answers, release)
    _hand_in(course, "erin", {}, release)
    _hand_in(course, "frank", {}, release)
    return course


@pytest.mark.parametrize("disguise", DISGUISES)
def test_the_disguised_copy_is_the_only_pair(tmp_path: Path, disguise: str) -> None:
    course = _course(tmp_path, disguise)
    answers = similarity.class_answers(course, "simt")
    assert [a.student for a in answers] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    pairs = similarity.similar_pairs(answers)
    assert [(p.first, p.second) for p in pairs] == [("alice", "bob")], disguise
    kernel = "simt.ipynb/simt-kernel"
    assert pairs[0].cells[kernel] >= fp.THRESHOLD
    # the kernel's body (lines 2 on: the decorator and signature are the release's) matches
    for student in ("alice", "bob"):
        ranges = pairs[0].lines[student][kernel]
        assert ranges and ranges[0][0] <= 3 and ranges[-1][1] >= 6, (student, ranges)


def test_starter_code_never_makes_students_alike(tmp_path: Path) -> None:
    """erin and frank handed in the release: with the release's code taken out, nothing is left."""
    course = _course(tmp_path, "renamed")
    answers = {a.student: a for a in similarity.class_answers(course, "simt")}
    assert answers["erin"].all_hashes() == frozenset()
    assert similarity.compare(answers["erin"], answers["frank"], threshold=0.0) is None


def test_shared_given_code_in_a_solution_cell_is_taken_out(tmp_path: Path) -> None:
    """A helper handed out inside the solution cell would make honest students look alike."""
    helper = dict(HONEST["histogram_kernel"])["continue"]
    course = tmp_path / "course"
    (course / "exercises" / "hist").mkdir(parents=True)
    stub = 'def mine():\n    raise NotImplementedError("yours")\n'
    cell = nbformat.v4.new_code_cell(helper + "\n\n" + stub)
    cell.metadata["nbgrader"] = {"solution": True, "grade_id": "hist", "grade": False}
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), course / "exercises/hist/hist.ipynb")
    for student, (_, own) in zip(("ann", "ben"), HONEST["heat_step"]):
        folder = course / "submitted" / student / "hist"
        folder.mkdir(parents=True)
        cell.source = helper + "\n\n" + own
        nbformat.write(nbformat.v4.new_notebook(cells=[cell]), folder / "hist.ipynb")
    ann, ben = similarity.class_answers(course, "hist")
    assert similarity.compare(ann, ben) is None
    with_helper = [
        fp.hashes(fp.fingerprints(helper + "\n\n" + own)) for _, own in HONEST["heat_step"]
    ]
    assert fp.similarity(*with_helper[:2]) >= fp.THRESHOLD  # what the subtraction prevents


def test_the_command_prints_the_pairs_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    course = _course(tmp_path, "no-op statements")
    assert grader_main(["--course", str(course), "similarity", "simt"]) == 0
    printed = capsys.readouterr().out
    assert "6 students compared" in printed and "1 pair(s) at or above 0.60" in printed
    assert re.search(r"alice ~ bob: \d\.\d\d over all answers", printed)
    assert re.search(r"simt\.ipynb/simt-kernel: \d\.\d\d; alice lines [\d, -]+; bob lines", printed)
    report = json.loads((course / "grading" / "simt" / "similarity.json").read_text())
    assert report["students"] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    assert report["threshold"] == fp.THRESHOLD and report["k"] == fp.K
    (pair,) = report["pairs"]
    assert (pair["first"], pair["second"]) == ("alice", "bob")
    assert pair["cells"]["simt.ipynb/simt-kernel"] >= fp.THRESHOLD
    assert pair["lines"]["bob"]["simt.ipynb/simt-kernel"]

    assert grader_main(["--course", str(course), "similarity", "simt", "--threshold", "1.01"]) == 0
    assert "0 pair(s)" in capsys.readouterr().out
    assert json.loads((course / "grading" / "simt" / "similarity.json").read_text())["pairs"] == []


def test_the_command_says_when_there_are_no_submissions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nbgrader_config.py").write_text("")
    assert grader_main(["--course", str(tmp_path), "similarity", "simt"]) == 1
    assert "no submissions of simt" in capsys.readouterr().out
