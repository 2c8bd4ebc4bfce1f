"""``python -m grader similarity <assignment>``: pairs of students whose answers look copied.

Each student's own answers are the code cells nbgrader marks as solution
cells, in ``submitted/<student>/<assignment>/*.ipynb``. They are compared by
their winnowed token fingerprints (:mod:`grader.verdicts.fingerprints`), so
renaming, new comments, new layout, swapped statements and added no-op
statements do not hide a copy. Everything the release itself contains
(``exercises/<assignment>/`` or ``release/<assignment>/``: the signatures, the
stubs, the given and test cells) is taken out of every student's fingerprints
first: code that everybody was handed never makes two students look alike.

A pair is reported when the answers as a whole, or one cell that both answered
with enough code, reach the threshold. The report gives, for each pair, the
similarity, each cell's, and the lines of each side whose fingerprints the
other has: the instructor reads those lines side by side and decides. A
similarity is a reason to look, never a verdict.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.verdicts import fingerprints as fp

#: Where the released notebooks may be, relative to the course (nbgrader_config's
#: ``release_directory`` is ``exercises``; nbgrader's own default is ``release``).
RELEASE_FOLDERS = ("exercises", "release")


@dataclass
class Answers:
    """One student's solution cells: fingerprints (starter code taken out) by cell."""

    student: str
    cells: dict[str, list[fp.Fingerprint]] = field(default_factory=dict)

    def all_hashes(self) -> frozenset[int]:
        return frozenset(m.hash for marks in self.cells.values() for m in marks)


@dataclass
class Pair:
    """Two students whose answers reach the threshold, and where they match."""

    first: str
    second: str
    similarity: float  # of the answers as a whole
    cells: dict[str, float]  # cell -> its similarity, for cells both answered with enough code
    lines: dict[str, dict[str, list[tuple[int, int]]]]  # student -> cell -> matching line ranges

    @property
    def highest(self) -> float:
        return max([self.similarity, *self.cells.values()])


def _code_cells(notebook: Path) -> list[dict]:
    """The code cells of *notebook*, with their sources joined; none if it is not a notebook."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return []
    found = []
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            meta = cell.get("metadata", {}).get("nbgrader", {})
            found.append({"source": source, "nbgrader": meta if isinstance(meta, dict) else {}})
    return found


def solution_cells(notebook: Path) -> dict[str, str]:
    """``"<notebook>/<grade id>"`` -> source of each code cell with nbgrader ``solution: true``."""
    return {
        f"{notebook.name}/{cell['nbgrader'].get('grade_id', index)}": cell["source"]
        for index, cell in enumerate(_code_cells(notebook))
        if cell["nbgrader"].get("solution") is True
    }


def released_hashes(course: Path, assignment: str) -> frozenset[int]:
    """Every k-gram hash (not only the winnowed ones) of every code cell of the release.

    All k-grams, since a student's winnowing may pick a k-gram of the starter
    code that the release's own winnowing passed over.
    """
    found: set[int] = set()
    for folder in RELEASE_FOLDERS:
        for notebook in sorted((course / folder / assignment).glob("*.ipynb")):
            for cell in _code_cells(notebook):
                found |= fp.hashes(fp.kgram_hashes(cell["source"]))
    return frozenset(found)


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if p.is_file() and not p.is_symlink())


def class_answers(course: Path, assignment: str) -> list[Answers]:
    """Each student's solution cells of *assignment*, fingerprinted, less the release's code."""
    starter = released_hashes(course, assignment)
    submitted = course / "submitted"
    students = sorted(p.parent.name for p in submitted.glob(f"*/{assignment}") if p.is_dir())
    result = []
    for student in students:
        answers = Answers(student)
        for notebook in _notebooks(submitted / student / assignment):
            for cell, source in solution_cells(notebook).items():
                answers.cells[cell] = [m for m in fp.fingerprints(source) if m.hash not in starter]
        result.append(answers)
    return result


def _lines(answers: Answers, other: frozenset[int]) -> dict[str, list[tuple[int, int]]]:
    found = {cell: fp.line_ranges(marks, other) for cell, marks in answers.cells.items()}
    return {cell: ranges for cell, ranges in found.items() if ranges}


def compare(first: Answers, second: Answers, threshold: float = fp.THRESHOLD) -> Pair | None:
    """The match of two students' answers, or ``None`` below *threshold* or with too little code."""
    mine, theirs = first.all_hashes(), second.all_hashes()
    if min(len(mine), len(theirs)) < fp.MIN_FINGERPRINTS:
        return None  # one of them wrote too little of their own to compare
    whole = fp.similarity(mine, theirs)
    cells = {}
    for cell in sorted(first.cells.keys() & second.cells.keys()):
        a, b = fp.hashes(first.cells[cell]), fp.hashes(second.cells[cell])
        if min(len(a), len(b)) >= fp.MIN_FINGERPRINTS:
            cells[cell] = round(fp.similarity(a, b), 3)
    pair = Pair(first.student, second.student, round(whole, 3), cells, {})
    if pair.highest < threshold:
        return None
    pair.lines = {
        first.student: _lines(first, theirs),
        second.student: _lines(second, mine),
    }
    return pair


def similar_pairs(answers: list[Answers], threshold: float = fp.THRESHOLD) -> list[Pair]:
    """Every pair of students at or above *threshold*, the most similar first."""
    pairs = [compare(a, b, threshold) for a, b in itertools.combinations(answers, 2)]
    found = [p for p in pairs if p is not None]
    return sorted(found, key=lambda p: (-p.highest, p.first, p.second))


def _ranges(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def report_text(assignment: str, students: int, pairs: list[Pair], threshold: float) -> str:
    """The per-pair report the command prints: each pair, then its cells, most similar first.

    A pair whose answers as a whole pass shows every cell with matching lines
    (``-`` where one side's cell was too short to measure); a pair reported
    for some cells only shows those. The JSON file keeps everything.
    """
    lines = [
        f"{assignment}: {students} students compared (k={fp.K}, window={fp.WINDOW}); "
        f"{len(pairs)} pair(s) at or above {threshold:.2f}"
    ]
    for pair in pairs:
        lines.append(f"{pair.first} ~ {pair.second}: {pair.similarity:.2f} over all answers")
        matched = set(pair.lines[pair.first]) | set(pair.lines[pair.second])
        if pair.similarity < threshold:  # reported for some cells: show only those
            matched = {cell for cell, share in pair.cells.items() if share >= threshold}
        for cell in sorted(matched, key=lambda c: (-pair.cells.get(c, 0.0), c)):
            share = f"{pair.cells[cell]:.2f}" if cell in pair.cells else "-"
            sides = [
                f"{who} lines {_ranges(pair.lines[who][cell])}"
                for who in (pair.first, pair.second)
                if cell in pair.lines[who]
            ]
            lines.append(f"  {cell}: {share}" + (f"; {'; '.join(sides)}" if sides else ""))
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Compare every pair of students' answer cells by token fingerprints (names, comments, "
        "layout and starter code do not count) and report the pairs that look copied."
    )
    parser.add_argument("assignment")
    parser.add_argument(
        "--threshold",
        type=float,
        default=fp.THRESHOLD,
        help=f"report pairs from this similarity on, 0 to 1 ({fp.THRESHOLD})",
    )


def main(course: Path, args: argparse.Namespace) -> int:
    """Print the report and write ``grading/<assignment>/similarity.json``."""
    answers = class_answers(course, args.assignment)
    if not answers:
        print(f"no submissions of {args.assignment} in {course / 'submitted'}")
        return 1
    pairs = similar_pairs(answers, args.threshold)
    print(report_text(args.assignment, len(answers), pairs, args.threshold))
    out = course / "grading" / args.assignment / "similarity.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "assignment": args.assignment,
        "threshold": args.threshold,
        "k": fp.K,
        "window": fp.WINDOW,
        "students": [a.student for a in answers],
        "pairs": [asdict(p) for p in pairs],
    }
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"written to {out}")
    return 0
