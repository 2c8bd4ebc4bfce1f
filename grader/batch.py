"""Grade a whole class: each student alone, in parallel, then one merge into the gradebook.

nbgrader's gradebook is an sqlite file, which does not take parallel writers,
and a student's kernel must not reach it. So every student is graded in a
course copy of its own (``<work>/<student>/``: a copy of the gradebook made
before grading starts, that student's submission, a config that selects the
``grader-sandbox`` kernel) by a separate ``nbgrader autograde`` process with a
wall-time limit; only this process writes the real gradebook, merging one
student at a time through nbgrader's :class:`~nbgrader.api.Gradebook`. A
student whose grading failed (a worker killed, the time limit) is listed, with
the command that grades them again; nothing of the others is lost.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import queue
import re
import shutil
import signal
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader import box as boxes
from grader import cell_budgets, cgroups, sandbox
from grader.check import check_submission
from grader.flags import FLAGS_ENV
from grader.processes import BASE_UID, claim_uids, kill_user_processes, unreachable
from grader.safe_files import Allowance, copy_tree, replace_tree, size_text

if TYPE_CHECKING:
    from traitlets.config import Config

_CONFIG = """\
# Made by grader.batch for one student's course copy; do not edit.
c = get_config()  # noqa: F821
load_subconfig({main!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db_url!r}
# The run's limits and this worker's user id; the sandbox is made in box/.
c.GuardedExecute.sandbox_policy = {policy!r}
c.GuardedExecute.box_folder = {box!r}
c.GuardedExecute.cell_budgets = {budgets!r}
"""


@dataclass
class Outcome:
    """One student's result, as the summary table shows it."""

    student: str
    status: str = "not graded"
    score: float | None = None
    max_score: float | None = None
    seconds: float = 0.0
    flags: list[str] = field(default_factory=list)


@dataclass
class Batch:
    """Settings for one grading run."""

    course: Path
    assignment: str
    work: Path
    workers: int = 1
    wall_seconds: int = 600
    memory_bytes: int = 4 << 30
    cpu_seconds: int = 600
    processes: int = 512
    disk_bytes: int = 1 << 30
    #: What one assignment's graded folders in ``autograded/`` may hold together.
    class_disk_bytes: int = 16 << 30
    level: str = ""
    #: Threads per notebook for the numerical libraries; 0: this machine's cores
    #: shared out among the workers.
    threads: int = 0
    #: Whether notebooks see the GPUs; None: yes, unless the course's
    #: ``c.Grader.without_gpu`` lists the assignment.
    gpu: bool | None = None
    #: Per-cell limits measured on the solution (set by :func:`prepare`; see grader.cell_budgets).
    cell_budgets: Path | None = None

    def __post_init__(self) -> None:
        self.course = self.course.resolve()
        self.work = self.work.resolve()
        self.level = self.level or sandbox.detect_level()
        self.threads = self.threads or max(1, len(os.sched_getaffinity(0)) // self.workers)
        if self.gpu is None:
            self.gpu = self.assignment not in course_setting(self.course, "without_gpu", [])


def students_of(course: Path, assignment: str) -> list[str]:
    """Every student with a submission of *assignment*, sorted."""
    submitted = course / "submitted"
    return (
        sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())
        if submitted.is_dir()
        else []
    )


def _traversable(path: Path) -> None:
    """Others may pass through *path* but not list it (the sandbox user walks to its folder)."""
    path.chmod(0o711)


def prepare(batch: Batch) -> Path:
    """The run's shared pieces: a template gradebook, the kernelspec folder."""
    batch.work.mkdir(parents=True, exist_ok=True)
    _traversable(batch.work)
    if batch.level == "uid":  # no private mounts: the sandbox user walks the real path
        blocked = unreachable(batch.work, BASE_UID)
        if blocked:
            raise SystemExit(
                f"the sandbox user cannot pass through {blocked}: use --work with "
                "a folder others may pass through (e.g. under /var/tmp) or "
                f"chmod o+x {blocked}"
            )
    main_db = batch.course / "gradebook.db"
    if not main_db.is_file():
        raise SystemExit(
            f"no gradebook in {batch.course}: run 'nbgrader generate_assignment "
            f"{batch.assignment}' first"
        )
    main_db.chmod(0o600)  # hidden tests live in it
    template = batch.work / "template.db"
    shutil.copy2(main_db, template)
    template.chmod(0o600)
    timeout = int(_course_config(batch.course).Execute.get("timeout", 60))
    batch.cell_budgets = cell_budgets.budgets_file(
        batch.course, batch.assignment, batch.work, timeout
    )
    return template


def student_copy(
    batch: Batch, student: str, template: Path, uid: int | None
) -> tuple[Path, list[str]]:
    """A course folder for one student: config, gradebook copy, sources, their submission.

    The submission is copied without links or oversized files (what was left
    out comes back as flags): it came from outside, and nbgrader copies it on
    as root.
    """
    root = batch.work / student
    if root.is_symlink() or root.is_file():
        root.unlink()
    elif root.exists():
        shutil.rmtree(root)
    root.mkdir()
    _traversable(root)
    shutil.copy2(template, root / "gradebook.db")
    (root / "gradebook.db").chmod(0o600)
    source = batch.course / "solutions" / batch.assignment
    shutil.copytree(
        source,
        root / "solutions" / batch.assignment,
        ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"),
    )
    (root / "submitted" / student).mkdir(parents=True)
    left_out = copy_tree(
        batch.course / "submitted" / student / batch.assignment,
        root / "submitted" / student / batch.assignment,
    )
    for private in ("solutions", "submitted"):
        (root / private).chmod(0o700)
    policy = sandbox.Policy(
        level=batch.level,
        uid=uid,
        memory_bytes=batch.memory_bytes,
        cpu_seconds=batch.cpu_seconds,
        processes=batch.processes,
        disk_bytes=batch.disk_bytes,
        threads=batch.threads,
        gpu=bool(batch.gpu),
    )
    policy.save(root / "limits.json")
    (root / "nbgrader_config.py").write_text(
        _CONFIG.format(
            main=str(batch.course / "nbgrader_config.py"),
            root=str(root),
            db_url=f"sqlite:///{root / 'gradebook.db'}",
            policy=str(root / "limits.json"),
            box=str(root / "box"),
            budgets=str(batch.cell_budgets or ""),
        )
    )
    (root / "nbgrader_config.py").chmod(0o600)
    return root, [f"submission file {line}" for line in left_out]


@functools.cache
def _forkserver() -> multiprocessing.context.BaseContext:
    """The context whose processes fork from one server with nbgrader already imported."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["grader.autograde_one"])
    return context


def _kill_group(pid: int) -> None:
    """Kill a grading process and everything in its session (its kernel included)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:  # not yet its own session leader: only the process itself
        os.kill(pid, signal.SIGKILL)


#: What nbgrader's log says when a notebook could not be run, and what that means.
_FAILURES = (
    ("DeadKernelError", "the kernel died while a cell ran (the notebook ended it, or it crashed)"),
    ("Kernel died before replying", "the kernel died while starting"),
    ("Kernel didn't respond", "the kernel did not start in time"),
)


def failure_reason(log: str) -> str:
    """One line that says why nbgrader could not grade a notebook, from its log."""
    for marker, meaning in _FAILURES:
        if marker in log:
            return meaning
    errors = [
        line.strip()
        for line in log.splitlines()
        if re.match(r"\s*[\w.]+(Error|Exception|Exit)\b:?", line)
        and "NbGraderException" not in line
    ]
    last = errors[-1] if errors else (log.strip().splitlines() or ["no log"])[-1]
    return "nbgrader: " + last[:200]


def grade_student(batch: Batch, student: str, template: Path, uid: int | None) -> Outcome:
    """Check, then autograde one student in their own copy; never raises."""
    started = time.monotonic()
    outcome = Outcome(student)
    if not (batch.course / "submitted" / student / batch.assignment).is_dir():
        outcome.status = "no submission"
        return outcome
    try:
        root, outcome.flags = student_copy(batch, student, template, uid)
        outcome.flags += check_submission(
            root / "submitted" / student / batch.assignment, batch.assignment, template, repair=True
        )
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["JUPYTER_RUNTIME_DIR"] = str(root / "jupyter-runtime")
        env[FLAGS_ENV] = str(root / "flags.jsonl")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        from grader import autograde_one  # nbgrader's imports: only when grading

        proc = _forkserver().Process(
            target=autograde_one.grade,
            args=(str(root), batch.assignment, student, env, str(root / "autograde.log")),
        )
        proc.start()
        proc.join(timeout=batch.wall_seconds)
        if proc.is_alive():
            _kill_group(proc.pid)
            proc.join()
            outcome.flags.append(f"stopped after the {batch.wall_seconds} s limit per notebook")
        if uid is not None:
            kill_user_processes(uid)
        # Killed before nbgrader took its sandbox apart: do it here.
        outcome.flags += [f"memory: {reason}" for reason in boxes.close_left_behind(root / "box")]
        result_file = root / "result.json"
        result = json.loads(result_file.read_text()) if result_file.is_file() else None
        if (root / "flags.jsonl").is_file():
            for line in (root / "flags.jsonl").read_text().splitlines():
                flag = json.loads(line)
                outcome.flags.append(f"{flag['grade_id']}: {flag['reason']}")
        if result and result["success"]:
            outcome.status = "graded"
        else:
            outcome.status = "failed"
            # a limit that stopped the notebook is the reason; nbgrader's error only echoes it
            stopped = any(
                f.startswith(("memory:", "disk:")) or "limit per notebook" in f
                for f in outcome.flags
            )
            if not stopped and proc.exitcode not in (0, None):
                outcome.flags.append(f"grading process ended with status {proc.exitcode}")
            elif not stopped:
                log = (root / "autograde.log").read_text(errors="replace")
                outcome.flags.append(failure_reason(log + (result or {}).get("log", "")))
    except Exception as error:  # noqa: BLE001  (one student's problem must not stop the class)
        outcome.status = "failed"
        outcome.flags.append(f"{type(error).__name__}: {error}")
    outcome.seconds = round(time.monotonic() - started, 1)
    return outcome


def merge(batch: Batch, outcome: Outcome) -> None:
    """Copy one graded student's scores and autograded folder into the course."""
    from sqlalchemy.exc import SAWarning

    root = batch.work / outcome.student
    graded = root / "autograded" / outcome.student / batch.assignment
    target = batch.course / "autograded" / outcome.student / batch.assignment
    target.parent.mkdir(parents=True, exist_ok=True)
    others = [p for p in target.parents[1].glob(f"*/{batch.assignment}") if p != target]
    limit = f"the class's {size_text(batch.class_disk_bytes)} in autograded/ (--class-disk)"
    allowance = Allowance.beside(others, batch.class_disk_bytes, limit)
    left_out = replace_tree(graded, target, allowance)
    outcome.flags += [f"graded folder: {line}" for line in left_out]
    # nbgrader's own update_or_create_submission warns about its session (harmless).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        _merge_scores(batch, outcome, root)


def _merge_scores(batch: Batch, outcome: Outcome, root: Path) -> None:
    from nbgrader.api import Gradebook

    course_id = _course_id(batch.course)
    with (
        Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id) as src,
        Gradebook(f"sqlite:///{batch.course / 'gradebook.db'}", course_id) as dst,
    ):
        sub = src.find_submission(batch.assignment, outcome.student)
        dst.update_or_create_student(outcome.student)
        dst.update_or_create_submission(batch.assignment, outcome.student, timestamp=sub.timestamp)
        for notebook in sub.notebooks:
            target = dst.find_submission_notebook(notebook.name, batch.assignment, outcome.student)
            target.late_submission_penalty = notebook.late_submission_penalty
            target.flagged = notebook.flagged or bool(outcome.flags)
            for grade in notebook.grades:
                copy = dst.find_grade(grade.name, notebook.name, batch.assignment, outcome.student)
                copy.auto_score = grade.auto_score
                copy.needs_manual_grade = grade.needs_manual_grade
            for comment in notebook.comments:
                copy = dst.find_comment(
                    comment.name, notebook.name, batch.assignment, outcome.student
                )
                copy.auto_comment = comment.auto_comment
        dst.db.commit()
        merged = dst.find_submission(batch.assignment, outcome.student)
        outcome.score, outcome.max_score = merged.score, merged.max_score
        if merged.needs_manual_grade:
            outcome.flags.append("needs manual grading")


def _course_config(course: Path) -> Config:
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()


@functools.cache  # read once per run, not once per merged student
def _course_id(course: Path) -> str:
    return _course_config(course).CourseDirectory.get("course_id", "default_course")


def course_setting(course: Path, name: str, default: object) -> object:
    """A grading setting of the course, ``c.Grader.<name>`` in its nbgrader_config.py.

    nbgrader itself ignores the ``Grader`` section; only this package reads it.
    """
    return _course_config(course).Grader.get(name, default)


def run(batch: Batch, students: list[str], progress: bool = True) -> list[Outcome]:
    """Grade *students* with ``batch.workers`` parallel workers; outcomes in input order."""
    return run_classes([(batch, students)], progress)[0]


def run_classes(
    classes: list[tuple[Batch, list[str]]], progress: bool = True
) -> list[list[Outcome]]:
    """Grade several assignments' classes through one pool of workers.

    One pool keeps every worker busy until the last notebook of all of them: a
    run per assignment would end each one with a tail in which a single slow
    notebook (an endless loop held to the cell timeout) runs alone. The
    workers' number is the first batch's (all must agree, as it sets each
    notebook's thread share); outcomes come per class, in input order.
    """
    workers = classes[0][0].workers
    if any(b.workers != workers for b, _ in classes):
        raise ValueError("the batches of one run must have the same number of workers")
    cgroups.placement()  # before any worker starts: a move into its leaf moves the grader alone
    templates = [prepare(b) for b, _ in classes]
    own_uids = sandbox.own_user(classes[0][0].level)
    with claim_uids(workers if own_uids else 0) as uids:
        return _run_pool(classes, templates, uids, progress)


def _run_pool(
    classes: list[tuple[Batch, list[str]]],
    templates: list[Path],
    uids: list[int],
    progress: bool,
) -> list[list[Outcome]]:
    """The pool of :func:`run_classes`: each worker grades as one of *uids* (if any)."""
    from tqdm import tqdm

    workers = classes[0][0].workers
    slots: queue.Queue[int | None] = queue.Queue()
    for slot in range(workers):
        slots.put(uids[slot] if uids else None)

    def job(batch: Batch, student: str, template: Path) -> Outcome:
        uid = slots.get()
        try:
            return grade_student(batch, student, template, uid)
        finally:
            slots.put(uid)

    outcomes: list[dict[str, Outcome]] = [{} for _ in classes]
    names = ", ".join(dict.fromkeys(b.assignment for b, _ in classes))
    with (
        ThreadPoolExecutor(workers) as pool,
        tqdm(
            total=sum(len(s) for _, s in classes),
            desc=f"grading {names}",
            unit="notebook",
            disable=not progress,
        ) as bar,
    ):
        futures = {
            pool.submit(job, batch, student, template): index
            for index, ((batch, students), template) in enumerate(zip(classes, templates))
            for student in students
        }
        for future in as_completed(futures):
            outcome = future.result()
            index = futures[future]
            batch = classes[index][0]
            if outcome.status == "graded":
                try:
                    merge(batch, outcome)
                except Exception as error:  # noqa: BLE001  (reported, batch goes on)
                    outcome.status = "failed"
                    outcome.flags.append(f"merge: {type(error).__name__}: {error}")
            outcomes[index][outcome.student] = outcome
            bar.update()
    ordered = []
    for (batch, students), graded in zip(classes, outcomes):
        ordered.append([graded[s] for s in students])
        (batch.work / "summary.json").write_text(
            json.dumps([asdict(o) for o in ordered[-1]], indent=1)
        )
    return ordered


def table(outcomes: list[Outcome]) -> str:
    """The summary table: one line per student."""
    width = max([7, *(len(o.student) for o in outcomes)])
    lines = [f"{'student':<{width}}  {'score':>11}  {'seconds':>7}  {'status':<8}  flags"]
    for o in outcomes:
        score = f"{o.score:g}/{o.max_score:g}" if o.score is not None else "-"
        lines.append(
            f"{o.student:<{width}}  {score:>11}  {o.seconds:>7.1f}  {o.status:<8}  "
            + "; ".join(o.flags)
        )
    return "\n".join(lines)
