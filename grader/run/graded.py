"""What a graded class left behind, read back: each cell's score, each cell's error.

The bench reads them to report scores cell by cell and to explain a notebook
whose score is unlike the rest of its kind; the cheating tests read them to
check a hostile submission's cells one by one.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from grader.run.one_student import Outcome


def cell_scores(course: Path, assignment: str, student: str) -> dict[str, float | None]:
    """Each graded cell's automatic score of one student, from the course's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        try:
            submission = gradebook.find_submission(assignment, student)
        except MissingEntry:  # never merged: not graded
            return {}
        return {
            grade.name: grade.auto_score
            for notebook in submission.notebooks
            for grade in notebook.grades
        }


def unlike_the_rest(course: Path, assignment: str, outcomes: list[Outcome]) -> list[dict]:
    """The notebooks of one kind whose score is not the kind's most common one.

    Every notebook of a kind is the same answer, so any score unlike the
    others is a grading fault (a limit reached under load, a flaky test):
    each comes with its cells' scores and its graded cells' errors.
    """
    scores = [o.score for o in outcomes]
    usual = max(set(scores), key=scores.count) if scores else None
    return [
        {
            "student": o.student,
            "score": o.score,
            "cell_scores": cell_scores(course, assignment, o.student),
            "errors": cell_errors(course, assignment, o.student),
        }
        for o in outcomes
        if o.score != usual
    ]


def cell_errors(course: Path, assignment: str, student: str) -> dict[str, str]:
    """Each graded cell's error in one student's autograded notebook, one line each."""
    found: dict[str, str] = {}
    for path in sorted((course / "autograded" / student / assignment).glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for output in cell.get("outputs", []):
                if grade_id and output.get("output_type") == "error":
                    found[grade_id] = f"{output.get('ename')}: {output.get('evalue', '')}"[:300]
    return found
