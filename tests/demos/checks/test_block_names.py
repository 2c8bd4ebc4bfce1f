"""Chapter 4c's two block sizes, SCAN_BLOCK and STENCIL_BLOCK, and the stencil's radius.

Why: the chapter's scan cells and stencil cells used to share one BLOCK, so a student who
changed it for one part changed the other without a word; each part now names its own, the
model answers and the checks follow those names, and the checks' messages use them. The
stencil check also took RADIUS from 1 to 8 only and said "the kernel needs the constants" for
any other: every radius a block can load works now, and one it cannot is named.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from demos.checks import answer_source, passes
from helpers import ROOT, notebook_cell

SCAN_AS_ANSWERED = answer_source("block_scan")
STENCIL_AS_ANSWERED = answer_source("stencil_shared")


def test_the_chapters_scan_and_stencil_each_have_their_own_block_size(capsys) -> None:
    cells = nbformat.read(ROOT / "course" / "04c-scans-and-stencils.ipynb", as_version=4).cells
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    assert re.search(r"^SCAN_BLOCK = ", code, re.M) and re.search(r"^STENCIL_BLOCK = ", code, re.M)
    assert not re.search(r"(?<![.\w])BLOCK\b", code), "a cell still reads a shared BLOCK"
    for name, source in (("block_scan", SCAN_AS_ANSWERED), ("stencil_shared", STENCIL_AS_ANSWERED)):
        assert passes(name, notebook_cell(source, name)) is True, capsys.readouterr().out
    said = capsys.readouterr().out
    assert "at SCAN_BLOCK = 128" in said, said
    wrong = SCAN_AS_ANSWERED.replace("SCAN_BLOCK = 64", "SCAN_BLOCK = 48")
    assert passes("block_scan", notebook_cell(wrong, "block_scan")) is False
    assert "SCAN_BLOCK = 48 is no power of two" in capsys.readouterr().out
    # the scan's constant changed in the same namespace leaves the stencil's alone
    both = SCAN_AS_ANSWERED.replace("SCAN_BLOCK = 64", "SCAN_BLOCK = 128") + STENCIL_AS_ANSWERED
    assert passes("stencil_shared", notebook_cell(both, "stencil_shared")) is True
    capsys.readouterr()
    halo = STENCIL_AS_ANSWERED.replace("left = i - RADIUS\n", "left = i - 1\n")  # radius 1 only
    assert passes("stencil_shared", notebook_cell(halo, "stencil_shared")) is False
    assert "RADIUS = 2, STENCIL_BLOCK = 32" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("radius", "block", "words"),
    [
        (12, 64, "right means with RADIUS = 12 and 13"),  # above the old limit of 8
        (40, 128, "right means with RADIUS = 40 and 41"),  # more than the simulated 32 threads
        (65, 64, "RADIUS = 65: a radius is a whole number from 1 to STENCIL_BLOCK (= 64 here)"),
        (0, 64, "RADIUS = 0: a radius is a whole number from 1 to STENCIL_BLOCK"),
    ],
    ids=["twelve", "forty", "above-the-block", "zero"],
)
def test_any_radius_the_block_can_load_works_and_others_are_named(
    radius: int, block: int, words: str, capsys
) -> None:
    source = STENCIL_AS_ANSWERED.replace("RADIUS = 1  #", f"RADIUS = {radius}  #").replace(
        "STENCIL_BLOCK = 64", f"STENCIL_BLOCK = {block}"
    )
    passes("stencil_shared", notebook_cell(source, "stencil_shared"))
    assert words in capsys.readouterr().out
