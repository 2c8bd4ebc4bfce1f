"""The course's time budget adds up: course/README.md's total is the sum of its chapters' times,
and a chapter that states its own time states the table's.

Why: chapters grow (new "your turn" cells, new sections) and new chapters join the table; a
review found chapters 4 and 4b taking far longer than stated and a total that no longer
matched its rows. A student plans sittings from these numbers.
"""

from __future__ import annotations

import re

import nbformat

from helpers import ROOT

ROW = re.compile(r"^\| (\w+) \| \[[^\]]+\]\(([^)]+\.ipynb)\) \|.*\| (\d+) min \|", re.MULTILINE)


def _rows() -> list[tuple[str, str, int]]:
    text = (ROOT / "course" / "README.md").read_text(encoding="utf-8")
    return [(chapter, notebook, int(minutes)) for chapter, notebook, minutes in ROW.findall(text)]


def test_the_total_is_the_sum_of_the_chapters() -> None:
    text = (ROOT / "course" / "README.md").read_text(encoding="utf-8")
    total = re.search(r"Total: about (\d+) hours", text)
    assert total, "course/README.md states no total"
    minutes = sum(m for _, _, m in _rows())
    assert len(_rows()) >= 10 and abs(int(total.group(1)) * 60 - minutes) <= 30, minutes


def test_a_chapter_that_states_its_time_states_the_tables() -> None:
    for chapter, notebook, minutes in _rows():
        cells = nbformat.read(ROOT / "course" / notebook, as_version=4).cells
        stated = re.search(r"\*\*Time:\*\* about (\d+) minutes", cells[0].source)
        assert stated is None or int(stated.group(1)) == minutes, (chapter, stated.group(0))
