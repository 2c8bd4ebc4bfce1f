"""The course manifest (demos/course.toml) names only what exists, and a bad entry says what is bad.

Why: the checks registry, the command line, the README's chapter table, the student edition
and nbgrader's configuration all read their lists from the manifest, so a name in it that
points nowhere breaks them far from the cause. Each kind of entry is resolved here against
the tree once; each kind of mistake an author makes stops the loading with one line naming
the entry.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

from demos import manifest, provenance
from helpers import ROOT

COURSE = manifest.course()


def test_the_chapters_are_exactly_the_notebooks_of_course() -> None:
    listed = [chapter.notebook for chapter in COURSE.chapters]
    present = sorted(p.name for p in (ROOT / "course").glob("*.ipynb"))
    assert listed == present, "course/ and the manifest's chapters differ (or are out of order)"
    assert all(ch.notebook.startswith(f"{ch.id}-") for ch in COURSE.chapters)


def test_every_check_is_a_function_with_a_model_answer() -> None:
    for name, check in COURSE.checks.items():
        module, _, function = check.target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), check.target
        assert (ROOT / "demos" / "checks" / "answers" / f"{name}.py").is_file(), name


def test_every_command_is_a_module_with_a_command_line() -> None:
    for command in COURSE.commands:
        spec = importlib.util.find_spec(command.module)
        assert spec and spec.origin, f"{' '.join(command.words)}: no module {command.module}"
        source = Path(spec.origin).read_text(encoding="utf-8")
        assert "def add_arguments(" in source and "def main(" in source, command.module


def test_every_package_and_result_file_exists() -> None:
    for chapter in COURSE.chapters:
        for package in chapter.packages:
            assert (ROOT / "demos" / package / "__init__.py").is_file(), (chapter.id, package)
        for result in chapter.results:
            assert (ROOT / result).is_file(), (chapter.id, result)


def test_every_measured_result_of_demos_belongs_to_one_chapter() -> None:
    """A new benchmark's result file is named by the chapter it measures for."""
    listed = [result for chapter in COURSE.chapters for result in chapter.results]
    measured = [p.relative_to(ROOT).as_posix() for p in provenance.result_files(ROOT)]
    assert sorted(listed) == sorted(p for p in measured if p.startswith("demos/"))


def test_the_assignments_are_exactly_the_folders_of_solutions_and_exercises() -> None:
    for folder in ("solutions", "exercises"):
        present = {p.name for p in (ROOT / folder).iterdir() if p.is_dir()}
        assert present == set(COURSE.assignments), folder
    for assignment in COURSE.assignments.values():
        for folder in ("solutions", "exercises"):
            assert (ROOT / folder / assignment.name / assignment.notebook).is_file()


def test_an_assignment_knows_the_chapters_that_end_with_it() -> None:
    assert COURSE.assignments["scan_transfer"].chapters == ("04c", "04d")
    assert COURSE.assignments["simt"].chapter == "02"
    assert COURSE.chapter("04b").number == "4b" and COURSE.chapter("00").number == "0"


CHAPTER = """
[assignments.a]
notebook = "a.ipynb"
without_gpu = true

[[chapters]]
id = "01"
notebook = "01-x.ipynb"
title = "X"
minutes = 10
before = ["Python"]
learn = "x"
packages = []
assignment = "a"

[chapters.checks]
f = "demos.checks.simt_checks:blocks_for"

[[chapters.commands]]
words = ["bench", "x"]
module = "demos.x"
help = "x"
"""


def test_a_well_formed_manifest_reads_as_written() -> None:
    course = manifest.parse(CHAPTER)
    (chapter,) = course.chapters
    assert chapter.checks == (manifest.Check("f", "01", "demos.checks.simt_checks:blocks_for"),)
    assert course.commands == (manifest.Command(("bench", "x"), "demos.x", "x", "01"),)
    assert course.assignments["a"].chapters == ("01",) and course.minutes == 10


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('title = "X"\n', "", "chapter 01: missing field 'title'"),
        (
            "minutes = 10",
            'minutes = "10"',
            "chapter 01: 'minutes' must be a whole number, got '10'",
        ),
        ("minutes = 10", "minutes = 10\nminuets = 5", "chapter 01: unknown field 'minuets'"),
        ('id = "01"', 'id = "1"', "chapter 1: id '1' is not like '04' or '04b'"),
        ('assignment = "a"', 'assignment = "b"', "chapter 01: assignment 'b' not in"),
        ('["Python"]', '["02"]', "chapter 01: 'before' names '02', no earlier chapter"),
        ('f = "demos', 'f = "demos.checks.simt_checks.blocks_for"\ng = "demos', "check 'f' must"),
        ('words = ["bench", "x"]', "words = []", "chapter 01: command: 'words' is empty"),
        ("without_gpu = true", "", "assignment 'a': missing field 'without_gpu'"),
        ('"01-x.ipynb"', '"1-x.ipynb"', "chapter 01: notebook '1-x.ipynb' is not named '01-NAME"),
        ("[assignments.a]", '[assignments."a b"]', "assignment 'a b': a name is letters"),
        ("[chapters.checks]", "[chapters.checks]\ng = 'demos.m:f'\nf = 'demos.m:f'", "TOML"),
    ],
)
def test_a_bad_entry_stops_with_one_line_naming_it(old: str, new: str, message: str) -> None:
    assert old in CHAPTER
    with pytest.raises(manifest.ManifestError) as error:
        manifest.parse(CHAPTER.replace(old, new, 1), "course.toml")
    text = str(error.value)
    assert "\n" not in text and text.startswith("course.toml: "), text
    assert message in text or (message == "TOML" and "Cannot overwrite" in text), text


def test_an_assignment_no_chapter_names_is_refused() -> None:
    text = CHAPTER.replace('assignment = "a"\n', "")
    with pytest.raises(manifest.ManifestError, match="assignment 'a': no chapter names it"):
        manifest.parse(text)


def test_a_check_name_used_twice_is_refused() -> None:
    second = CHAPTER.split("[[chapters]]")[1].replace('"01"', '"02"').replace("bench", "plot")
    with pytest.raises(manifest.ManifestError, match="check 'f' appears twice"):
        manifest.parse(CHAPTER + "[[chapters]]" + second.replace("01-x", "02-x"))
