"""grader.run.settings: the settings a batch takes from the course's nbgrader_config.py."""

from __future__ import annotations

import os
from pathlib import Path

from grader.run.settings import Batch, course_setting
from helpers import ROOT


def test_course_config_names_the_assignments_graded_without_a_gpu(tmp_path: Path) -> None:
    (tmp_path / "nbgrader_config.py").write_text(
        'c = get_config()\nc.Grader.without_gpu = ["cnn"]\n'
    )
    cnn = Batch(tmp_path, "cnn", tmp_path / "work", workers=2, level="limits")
    simt = Batch(tmp_path, "simt", tmp_path / "work", workers=2, level="limits")
    assert cnn.gpu is False and simt.gpu is True
    assert Batch(tmp_path, "cnn", tmp_path, level="limits", gpu=True).gpu is True  # asked
    assert cnn.threads == max(1, len(os.sched_getaffinity(0)) // 2)
    # the course's own config says which of its assignments need no GPU
    assert "cnn" in course_setting(ROOT, "without_gpu", [])
