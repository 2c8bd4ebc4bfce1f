"""What the grader copies back into the course is bounded per file, per notebook and per class."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.run import batch as batch_mod
from grader.sandbox.safe_files import Allowance, copy_tree

MB = 1 << 20


def _file(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def test_copies_share_an_allowance_and_say_what_they_left_out(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _file(first / "a.ipynb", 2 * MB)
    _file(second / "b.ipynb", 2 * MB)
    _file(second / "small.txt", 1000)
    os.symlink("/etc/passwd", second / "link")
    allowance = Allowance(3 * MB, "the class's total")
    assert copy_tree(first, tmp_path / "first-copy", allowance=allowance) == []
    left_out = copy_tree(second, tmp_path / "second-copy", allowance=allowance)
    assert left_out == [
        "b.ipynb: 2 MB, past the class's total",
        "link: a symbolic link, not copied",
    ]
    assert sorted(p.name for p in (tmp_path / "second-copy").iterdir()) == ["small.txt"]
    assert allowance.bytes_left == 1 * MB - 1000


def test_a_class_past_its_disk_total_is_flagged_and_a_regrade_replaces_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``merge`` counts the other students' graded folders against ``--class-disk``."""
    course, work = tmp_path / "course", tmp_path / "work"
    for student in ("alice", "bob"):
        _file(course / "autograded" / student / "simt" / "simt.ipynb", 600 << 10)
        _file(work / student / "autograded" / student / "simt" / "simt.ipynb", 600 << 10)
    _file(work / "carol" / "autograded" / "carol" / "simt" / "simt.ipynb", 600 << 10)
    _file(course / "autograded" / "alice" / "cnn" / "cnn.ipynb", 100 * MB)  # another class
    run = batch_mod.Batch(course, "simt", work, level="limits", gpu=True)
    run.class_disk_bytes = int(1.5 * MB)
    monkeypatch.setattr(batch_mod, "_merge_scores", lambda *args: None)

    carol = batch_mod.Outcome("carol", status="graded")
    batch_mod.merge(run, carol)
    assert carol.flags == [
        "graded folder: simt.ipynb: 600 KB, past the class's 1.5 MB in autograded/ (--class-disk)"
    ]
    assert not (course / "autograded" / "carol" / "simt" / "simt.ipynb").exists()

    bob = batch_mod.Outcome("bob", status="graded")  # graded again: its old folder is replaced
    batch_mod.merge(run, bob)
    assert bob.flags == []
    assert (course / "autograded" / "bob" / "simt" / "simt.ipynb").stat().st_size == 600 << 10
