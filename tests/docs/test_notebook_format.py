"""Committed notebooks are clean, canonical nbformat 4, and the chapters end properly.

Why: notebooks saved with outputs leak a machine's results (and sometimes
tokens or paths) into the repository and make diffs unreadable; a notebook that
is not in nbformat's canonical layout changes on every save, so diffs show noise.
nbgrader also relies on cell ids and metadata that only valid nbformat 4.5
files carry. The chapter checks keep the course's promise that every chapter
closes with a summary and sends the student to an exercise that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from demos import manifest
from helpers import ROOT

NOTEBOOK_DIRS = ("course", "solutions", "exercises")
# The chapters, in order, as the course manifest (demos/course.toml) lists them.
CHAPTERS = [Path(chapter.notebook).stem for chapter in manifest.course().chapters]


def committed_notebooks() -> list[Path]:
    found = []
    for folder in NOTEBOOK_DIRS:
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            if ".ipynb_checkpoints" not in path.parts:
                found.append(path)
    return found


def course_notebooks() -> list[Path]:
    return sorted((ROOT / "course").glob("*.ipynb"))


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_chapter_exists() -> None:
    names = [p.stem for p in course_notebooks()]
    assert names == CHAPTERS, f"course/ should hold exactly the chapters {CHAPTERS}, found {names}"


@pytest.mark.parametrize("path", committed_notebooks(), ids=_id)
def test_notebook_is_canonical_nbformat4(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    assert nb.nbformat == 4, f"{_id(path)} is nbformat {nb.nbformat}, expected 4"
    assert nb.nbformat_minor >= 5, (
        f"{_id(path)} is nbformat 4.{nb.nbformat_minor}: cells need ids (4.5)"
    )
    nbformat.validate(nb)  # raises ValidationError with the offending field
    canonical = nbformat.writes(nb)
    if not canonical.endswith("\n"):
        canonical += "\n"
    assert text == canonical, (
        f"{_id(path)} is not in nbformat's canonical layout; rewrite it with "
        "nbformat.write(nbformat.read(path, 4), path)"
    )
    ids = [cell.get("id") for cell in nb.cells]
    assert len(set(ids)) == len(ids), f"{_id(path)} has duplicate cell ids"


@pytest.mark.parametrize("path", committed_notebooks(), ids=_id)
def test_notebook_has_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{_id(path)}: code cells {dirty} have outputs or execution counts; clear them with "
        "`jupyter nbconvert --clear-output --inplace`"
    )


@pytest.mark.parametrize("path", course_notebooks(), ids=_id)
def test_chapter_ends_with_summary_and_exercise(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    last = nb.cells[-1]
    assert last.cell_type == "markdown", f"{_id(path)} should end with a markdown summary cell"
    assert re.search(r"^##\s+Summary", last.source, re.MULTILINE), (
        f"{_id(path)}: last cell has no '## Summary'"
    )
    pointers = re.findall(r"exercises/([A-Za-z0-9_]+)/", last.source)
    assert pointers, f"{_id(path)}: the summary should point to an exercise (exercises/<name>/)"
    for name in pointers:
        assert (ROOT / "exercises" / name).is_dir() or (ROOT / "solutions" / name).is_dir(), (
            f"{_id(path)} points to exercises/{name}/, which does not exist"
        )


@pytest.mark.parametrize("path", course_notebooks(), ids=_id)
def test_chapter_uses_the_demos_package_and_no_display_magics(path: Path) -> None:
    """Chapters import their code from demos (written once) and run headless (CI, nbval)."""
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    assert re.search(r"^\s*(import demos|from demos)", code, re.MULTILINE), (
        f"{_id(path)} never imports demos"
    )
    magics = re.findall(r"^\s*%matplotlib\s+(\w+)", code, re.MULTILINE)
    assert all(m == "inline" for m in magics), (
        f"{_id(path)} uses a display backend: %matplotlib {magics}"
    )
