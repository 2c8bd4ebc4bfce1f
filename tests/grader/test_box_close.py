"""What a notebook's box says when it is taken apart (grader.sandbox.box.Box.close).

The watcher beside a kernel counts the notebook's files every two seconds; a
notebook that writes past the limit and ends between two counts is still seen
over it, because the box counts them once more when the notebook has ended.
"""

from __future__ import annotations

from pathlib import Path

from grader.sandbox import box as boxes
from grader.sandbox import isolation as sandbox


def _box(tmp_path: Path, disk_bytes: int) -> boxes.Box:
    notebook_dir = tmp_path / "autograded" / "s1" / "demo"
    notebook_dir.mkdir(parents=True)
    policy = sandbox.Policy(level="limits", disk_bytes=disk_bytes)
    return boxes.open_box(policy, notebook_dir, tmp_path / "box", [])


def test_files_over_the_limit_when_the_notebook_ended_are_reported(tmp_path: Path) -> None:
    opened = _box(tmp_path, disk_bytes=1 << 20)
    (opened.runtime / "work" / "filler").write_bytes(b"x" * (3 << 20))
    reasons = opened.close()
    assert [kind for kind, _ in reasons] == ["disk"], reasons
    assert reasons[0][1].endswith("limit (counted when it ended)"), reasons
    assert not opened.runtime.exists()  # removed all the same


def test_files_under_the_limit_are_not(tmp_path: Path) -> None:
    opened = _box(tmp_path, disk_bytes=8 << 20)
    (opened.runtime / "work" / "filler").write_bytes(b"x" * (1 << 20))
    assert opened.close() == []
