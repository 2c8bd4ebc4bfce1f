"""``python -m grader selftest``: do the assignments grade as they should on this machine?

The hidden tests run in the grader's process (``grader.verdicts``), so a
solution notebook cannot be checked by just executing it. This command does
what an instructor would: in a scratch copy of the course it releases each
assignment with ``nbgrader generate_assignment``, hands in the instructor's
solution and the blank release as two students, grades both with real
``nbgrader autograde`` (this course's configuration: sandbox, hidden tests in
the grader), and prints one line per assignment. The solution must get full
marks and the blank release none; on a GPU node this covers the GPU paths
(CuPy arrays, real devices, compiled kernels) the CPU tests cannot. Its pieces
(the scratch copy, nbgrader's API run in an interpreter of its own, hand-ins,
the gradebook's scores) are also how the test suite drives nbgrader.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# nbgrader keeps global state (traitlets singletons, logging): its API runs in an
# interpreter of its own, inside the course copy, and reports each step as JSON.
_DRIVER = r"""
import json, os, sys
from traitlets.config.loader import PyFileConfigLoader
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

root, steps, out, timeout = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
os.chdir(root)
config = PyFileConfigLoader("nbgrader_config.py", path=root).load_config()
if timeout:
    config.Execute.timeout = int(timeout)
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
results = []
for method, *args in steps:
    result = getattr(api, method)(*args)
    results.append({"step": [method, *args], "success": bool(result["success"]),
                    "error": result.get("error") or "", "log": result.get("log") or ""})
with open(out, "w") as f:
    json.dump(results, f)
"""


def scratch_course(course: Path, parent: Path) -> Path:
    """A copy of *course*'s nbgrader configuration and ``solutions/`` in *parent*/course."""
    root = parent / "course"
    root.mkdir()
    shutil.copy2(course / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(course / "solutions", root / "solutions")
    return root


def nbgrader_env() -> dict[str, str]:
    """This environment, with its bin/ on PATH: nbgrader calls ``alembic``."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def run_nbgrader(
    root: Path, steps: list[list[str]], timeout: int | None = None, wall: float | None = None
) -> list[dict]:
    """Run NbGraderAPI methods, e.g. ``[["autograde", "simt", "alice"]]``, in one subprocess.

    One result per step: ``step``, ``success``, ``error`` and ``log``. *timeout*
    is nbgrader's per-cell limit, *wall* the limit of the whole run in seconds.
    """
    out = root / f"nbgrader-results-{os.getpid()}.json"
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(root), json.dumps(steps), str(out), str(timeout or "")],
        cwd=root,
        env=nbgrader_env(),
        capture_output=True,
        text=True,
        timeout=wall,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = json.loads(out.read_text())
    out.unlink()
    return results


def hand_in(root: Path, student: str, assignment: str, notebook: Path | str) -> Path:
    """Put a notebook (a path to copy, or raw text) where ``nbgrader autograde`` looks."""
    target = root / "submitted" / student / assignment / f"{assignment}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(notebook, Path):
        shutil.copy2(notebook, target)
    else:
        target.write_text(notebook)
    return target


def gradebook_scores(root: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(assignment, student) -> (score, max_score), read from the course's gradebook."""
    from nbgrader.api import Gradebook

    found = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                found[(assignment.name, submission.student.id)] = (
                    submission.score,
                    submission.max_score,
                )
    return found


def run(course: Path, assignments: list[str]) -> dict:
    """Scores of the solution and the blank release of each assignment, graded in a scratch copy."""
    with tempfile.TemporaryDirectory(prefix="grader-selftest-", ignore_cleanup_errors=True) as tmp:
        root = scratch_course(course, Path(tmp))
        try:
            released = run_nbgrader(root, [["generate_assignment", a] for a in assignments])
            failures = {
                a: r["error"][-800:] for a, r in zip(assignments, released) if not r["success"]
            }
            steps = []
            for a in (a for a in assignments if a not in failures):
                for student, folder in (("solution", "solutions"), ("blank", "exercises")):
                    hand_in(root, student, a, root / folder / a / f"{a}.ipynb")
                    steps.append(["autograde", a, student])
            for result in run_nbgrader(root, steps) if steps else []:
                if not result["success"]:
                    _, a, student = result["step"]
                    failures[f"{a}/{student}"] = result["error"][-800:]
        except RuntimeError as error:
            raise SystemExit(f"grader selftest: {error}") from None
        scores = {f"{a}/{s}": list(score) for (a, s), score in gradebook_scores(root).items()}
    return {"scores": scores, "failures": failures}


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
