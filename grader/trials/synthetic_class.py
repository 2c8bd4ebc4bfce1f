"""The synthetic class that ``python -m grader bench`` grades: kinds of notebook and their making.

Each kind is an answer a real class hands in, chosen for what it costs the
grader: a correct notebook (the usual cost), a partial one (the first part
only: are the points per part right?), one that loops for ever (held to its
cell limit), one that eats memory (stopped at the memory limit) and a hostile
one (blanks the test cells, writes at the gradebook). The default class of
twenty has them in the proportions of :data:`CLASS_OF_20`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat

CLASS_OF_20 = ["good"] * 12 + ["partial"] * 4 + ["looping", "memory", "hostile", "hostile"]
_EXTRA_CELL = {
    "looping": "while True:\n    pass",
    # writes every byte, so the memory is really used (not only reserved)
    "memory": "hog = []\nwhile True:\n    hog.append(b'x' * (1 << 28))",
    "hostile": "get_ipython().input_transformers_post.append(lambda lines: [])\n"
    "import glob\nfor path in glob.glob('../../../*.db'):\n"
    "    open(path, 'w').write('')",
}
KINDS = ("good", "partial", *_EXTRA_CELL)


def submission(course: Path, assignment: str, kind: str) -> nbformat.NotebookNode:
    """A synthetic notebook of the given *kind* for *assignment*.

    A partial one is the blank release with the solution's first answer cell
    filled in: every assignment has several answer cells, each for its own
    graded part, so it earns that part's points and no others.
    """
    solved = nbformat.read(course / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    if kind == "partial":
        blank = nbformat.read(
            course / "exercises" / assignment / f"{assignment}.ipynb", as_version=4
        )
        first = next(
            c
            for c in solved.cells
            if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
        )
        for cell in blank.cells:
            if (
                cell.metadata.get("nbgrader", {}).get("grade_id")
                == first.metadata["nbgrader"]["grade_id"]
            ):
                cell.source = first.source
        return blank
    if kind in _EXTRA_CELL:
        solved.cells.insert(1, nbformat.v4.new_code_cell(_EXTRA_CELL[kind]))
    return solved


def class_pattern(text: str) -> list[str]:
    """The kinds named in *text* (comma-separated), for ``--class-pattern``; all must be known."""
    kinds = text.split(",")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown kinds {unknown}; known: {', '.join(KINDS)}")
    return kinds
