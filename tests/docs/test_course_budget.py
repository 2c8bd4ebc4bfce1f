"""The course's time budget adds up: each chapter's time is written once, in the course manifest
(demos/course.toml), and the course's total and a chapter's own statement of its time agree
with it.

Why: chapters grow (new "your turn" cells, new sections) and new chapters join the course; a
review found chapters 4 and 4b taking far longer than stated and a total that no longer
matched its rows. A student plans sittings from these numbers. The README's chapter table and
total are rendered from the manifest (tools/docs/render.py; tests/docs/test_rendered_docs.py
keeps them fresh), so the times are read here from the manifest, not from that copy.
"""

from __future__ import annotations

import re

import nbformat

from demos import manifest
from helpers import ROOT


def test_the_total_is_the_sum_of_the_chapters() -> None:
    course = manifest.course()
    assert len(course.chapters) >= 10
    assert course.minutes == sum(chapter.minutes for chapter in course.chapters)
    text = (ROOT / "course" / "README.md").read_text(encoding="utf-8")
    total = re.search(r"Total: about (\d+) hours", text)
    assert total, "course/README.md states no total"
    assert abs(int(total.group(1)) * 60 - course.minutes) <= 30, course.minutes


def test_a_chapter_that_states_its_time_states_the_manifests() -> None:
    for chapter in manifest.course().chapters:
        cells = nbformat.read(ROOT / "course" / chapter.notebook, as_version=4).cells
        stated = re.search(r"\*\*Time:\*\* about (\d+) minutes", cells[0].source)
        assert stated is None or int(stated.group(1)) == chapter.minutes, (
            chapter.id,
            stated.group(0),
            chapter.minutes,
        )
