"""grader.run.settings: one set of settings, from the course's nbgrader_config.py and the flags."""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import fields
from pathlib import Path

import pytest

from grader.run.autograde import add_arguments
from grader.run.settings import (
    RUN_SETTINGS,
    SETTINGS,
    Batch,
    Grader,
    Size,
    course_settings,
    size_label,
)
from grader.sandbox.policy import Policy
from helpers import ROOT


def _course(tmp_path: Path, lines: str) -> Path:
    (tmp_path / "nbgrader_config.py").write_text(f"c = get_config()\n{lines}")
    return tmp_path


def _given(*argv: str) -> dict:
    """What ``python -m grader autograde simt ARGV`` hands to :class:`Batch`."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["simt", *argv])
    return {name: getattr(args, name) for name in SETTINGS if hasattr(args, name)}


def test_course_config_names_the_assignments_graded_without_a_gpu(tmp_path: Path) -> None:
    _course(tmp_path, 'c.Grader.without_gpu = ["cnn"]\n')
    cnn = Batch(tmp_path, "cnn", tmp_path / "work", workers=2, level="limits")
    simt = Batch(tmp_path, "simt", tmp_path / "work", workers=2, level="limits")
    assert cnn.gpu is False and simt.gpu is True
    assert Batch(tmp_path, "cnn", tmp_path, level="limits", gpu=True).gpu is True  # asked
    assert cnn.threads == max(1, len(os.sched_getaffinity(0)) // 2)
    # the course's own config says which of its assignments need no GPU
    assert "cnn" in course_settings(ROOT).without_gpu


def test_the_config_file_sets_what_the_command_line_does_not(tmp_path: Path) -> None:
    course = _course(
        tmp_path, 'c.Grader.wall_seconds = 30\nc.Grader.memory_bytes = "2G"\nc.Grader.workers = 3\n'
    )
    run = Batch(course, "simt", tmp_path / "work", level="limits", **_given("--workers", "5"))
    assert (run.wall_seconds, run.memory_bytes, run.workers) == (30, 2 << 30, 5)
    assert run.disk_bytes == Grader().disk_bytes  # neither sets it: the default
    plain = Batch(course, "simt", tmp_path / "work", level="limits", **_given())
    assert plain.workers == 3


def test_flags_read_sizes_and_refuse_nonsense(capsys: pytest.CaptureFixture) -> None:
    given = _given("--memory", "4G", "--disk", "512M", "--class-disk", "1K", "--wall", "20")
    assert given == {
        "memory_bytes": 4 << 30,
        "disk_bytes": 512 << 20,
        "class_disk_bytes": 1 << 10,
        "wall_seconds": 20,
    }
    for argv in (["--memory", "4X"], ["--workers", "0"], ["--level", "none"]):
        with pytest.raises(SystemExit):
            _given(*argv)
    assert "not a size like 4G or 512M: '4X'" in capsys.readouterr().err


def test_each_setting_is_written_once() -> None:
    """Batch takes its values from Grader (no defaults of its own), the kernel's limits
    default to the sandbox Policy's, and every setting but the course's list has a flag."""
    taken = {f.name for f in fields(Batch) if f.default is None and f.name != "cell_budgets"}
    assert taken == {*RUN_SETTINGS, "gpu"}
    defaults = Grader()
    for name in ("memory_bytes", "cpu_seconds", "processes", "disk_bytes"):
        assert getattr(defaults, name) == getattr(Policy(level=""), name), name
    flags = {Grader.class_traits()[name].metadata.get("flag") for name in RUN_SETTINGS}
    assert None not in flags and len(flags) == len(RUN_SETTINGS)


def test_the_instructors_guide_lists_every_setting_with_its_default() -> None:
    """docs/instructors.md has one table of the settings; it must say what Grader says."""
    text = (ROOT / "docs" / "instructors.md").read_text()
    rows = dict(re.findall(r"^\| `c\.Grader\.(\w+)` \|[^|]*\| `?([^|`]*?)`? \|", text, re.M))
    assert list(rows) == list(SETTINGS)
    for name, shown in rows.items():
        trait = Grader.class_traits()[name]
        default = trait.default_value
        if name == "without_gpu":
            continue  # the manifest's list, not a constant
        expected = size_label(default) if isinstance(trait, Size) else json.dumps(default)
        assert shown == expected, (name, shown, expected)


def test_an_attach_names_the_limits_the_earlier_array_grades_with(tmp_path: Path) -> None:
    from grader.run.slurm import limits_changed

    course = _course(tmp_path, "")
    earlier = Batch(course, "simt", tmp_path / "work", level="limits", memory_bytes=4 << 30)
    same = Batch(course, "simt", tmp_path / "work", level="bwrap", workers=8, memory_bytes=4 << 30)
    assert limits_changed(earlier, same) == []  # workers and the level are each node's own
    more = Batch(course, "simt", tmp_path / "work", level="limits", memory_bytes=8 << 30, gpu=False)
    assert limits_changed(earlier, more) == [
        "--memory 4G there, 8G here",
        "GPUs in the notebooks: True there, False here",
    ]
