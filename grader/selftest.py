"""``python -m grader selftest``: do the assignments grade as they should on this machine?

The hidden tests run in the grader's process (``grader.verdicts``), so a
solution notebook cannot be checked by just executing it. This command does
what an instructor would: in a scratch copy of the course it releases each
assignment with ``nbgrader generate_assignment``, hands in the instructor's
solution and the blank release as two students, grades both with real
``nbgrader autograde`` (this course's configuration: sandbox, hidden tests in
the grader), and prints one line per assignment. The solution must get full
marks and the blank release none; on a GPU node this covers the GPU paths
(CuPy arrays, real devices, compiled kernels) the CPU tests cannot.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# nbgrader keeps global state (traitlets singletons, logging): each run gets its own interpreter.
_DRIVER = r"""
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from nbgrader.api import Gradebook
root, assignments = sys.argv[1], json.loads(sys.argv[2])
os.chdir(root)
config = PyFileConfigLoader("nbgrader_config.py", path=root).load_config()
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
failures = {}
for a in assignments:
    for step, args in (("generate_assignment", (a,)),):
        result = getattr(api, step)(*args)
        if not result["success"]:
            failures[a] = (result.get("error") or "")[-800:]
    if a in failures:
        continue
    for student, folder in (("solution", "solutions"), ("blank", "exercises")):
        source = os.path.join(folder, a, f"{a}.ipynb")
        target = os.path.join("submitted", student, a)
        os.makedirs(target, exist_ok=True)
        with open(source) as src, open(os.path.join(target, f"{a}.ipynb"), "w") as dst:
            dst.write(src.read())
        result = api.autograde(a, student, force=True, create=True)
        if not result["success"]:
            failures[f"{a}/{student}"] = (result.get("error") or "")[-800:]
scores = {}
with Gradebook(f"sqlite:///{os.path.join(root, 'gradebook.db')}") as gb:
    for assignment in gb.assignments:
        for submission in assignment.submissions:
            key = f"{assignment.name}/{submission.student.id}"
            scores[key] = [submission.score, submission.max_score]
print(json.dumps({"scores": scores, "failures": failures}))
"""


def run(course: Path, assignments: list[str]) -> dict:
    """Scores of the solution and the blank release of each assignment, graded in a scratch copy."""
    scratch = Path(tempfile.mkdtemp(prefix="grader-selftest-"))
    try:
        root = scratch / "course"
        root.mkdir()
        shutil.copy2(course / "nbgrader_config.py", root / "nbgrader_config.py")
        shutil.copytree(course / "solutions", root / "solutions")
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(root), json.dumps(assignments)],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"grader selftest: nbgrader failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _score(score: list[float] | None) -> str:
    return "-" if not score else f"{score[0]:g}/{score[1]:g}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment", nargs="*", help="default: every assignment in solutions/")
    parser.add_argument("--json", type=Path, help="also write the scores to this file")


def main(course: Path, args: argparse.Namespace) -> int:
    """One line per assignment; exit 1 if a solution loses points or a blank release gains any."""
    assignments = args.assignment or sorted(
        p.name for p in (course / "solutions").iterdir() if p.is_dir()
    )
    outcome = run(course, assignments)
    if args.json:
        args.json.write_text(json.dumps(outcome, indent=1))
    bad = bool(outcome["failures"])
    for name, error in outcome["failures"].items():
        last = error.strip().splitlines()[-1] if error.strip() else "see nbgrader's log"
        print(f"FAILED  {name}: {last}")
    for a in assignments:
        solution = outcome["scores"].get(f"{a}/solution")
        blank = outcome["scores"].get(f"{a}/blank")
        good = bool(solution and blank and solution[0] == solution[1] and blank[0] == 0)
        bad |= not good
        verdict = "OK" if good else "WRONG"
        print(f"{verdict:6}  {a:16} solution {_score(solution):>6}  blank {_score(blank):>6}")
    return 1 if bad else 0
