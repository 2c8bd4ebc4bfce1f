"""Grade a whole class: each student alone, in parallel, then one merge into the gradebook.

nbgrader's gradebook is an sqlite file, which does not take parallel writers,
and a student's kernel must not reach it. So every student is graded in a
course copy of its own (``<work>/<student>/``: a copy of the gradebook made
before grading starts, that student's submission, a config that selects the
``grader-sandbox`` kernel) by a separate ``nbgrader autograde`` process with a
wall-time limit (:mod:`grader.run.one_student`); only this process writes the
real gradebook, merging one student at a time through nbgrader's
:class:`~nbgrader.api.Gradebook`. A student whose grading failed (a worker
killed, the time limit) is listed, with the command that grades them again;
nothing of the others is lost.

One pool of workers grades every class of a run. A class joins it as soon as
its solution has been timed for the cell limits (:func:`measure_limits`), and
a free worker takes the next notebook of the most costly class that has joined
(:mod:`grader.run.class_queue`, by the solution's seconds): the slow notebooks
start early, the short ones fill the end, so the workers run out of work
nearly together, and the cheap classes are graded while the costly solutions
are still being timed. A run can be stopped (*stop* of :func:`run_classes`):
no more notebooks start, those in flight are ended and cleaned up, and the
outcomes of the finished ones come back.

Here (the run's settings, :class:`Batch`, are :mod:`grader.run.settings`): its shared
pieces (:func:`prepare`), the pool of workers (:func:`run_classes`), the merge and the
summary table.
"""

from __future__ import annotations

import queue
import shutil
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from grader.integration import cell_budgets
from grader.run.class_queue import ClassQueue
from grader.run.grade_record import write_results
from grader.run.gradebook_lock import while_locked
from grader.run.one_student import Outcome, grade_student, traversable
from grader.run.settings import Batch, course_config, course_id
from grader.run.setup_check import check_solution
from grader.sandbox import cgroups
from grader.sandbox import environment as sandbox_environment
from grader.sandbox import isolation as sandbox
from grader.sandbox.processes import BASE_UID, claim_uids, unreachable
from grader.sandbox.safe_files import Allowance, replace_tree, size_text

__all__ = [
    "Batch",
    "Outcome",
    "grade_student",
    "measure_limits",
    "merge",
    "prepare",
    "run",
    "run_classes",
    "shared_template",
    "table",
]


def prepare(batch: Batch) -> Path:
    """The run's shared pieces: the template gradebook (its path), and the cell limits."""
    template = shared_template(batch)
    measure_limits(batch)
    return template


def shared_template(batch: Batch) -> Path:
    """The run's folder and its template gradebook (a copy made before grading starts)."""
    batch.work.mkdir(parents=True, exist_ok=True)
    traversable(batch.work)
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
    return template


def measure_limits(batch: Batch) -> None:
    """Time the solution for the limits of each cell (sets ``batch.cell_budgets``)."""
    timeout = int(course_config(batch.course).Execute.get("timeout", 60))
    # the solution runs with the notebooks' share of the cores and GPUs (no HOME of theirs)
    as_notebooks = sandbox.Policy(level=batch.level, threads=batch.threads, gpu=bool(batch.gpu))
    batch.cell_budgets = cell_budgets.budgets_file(
        batch.course,
        batch.assignment,
        batch.work,
        timeout,
        sandbox_environment.kernel_environment(as_notebooks),
    )


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
        while_locked(lambda: _merge_scores(batch, outcome, root))


def _merge_scores(batch: Batch, outcome: Outcome, root: Path) -> None:
    from nbgrader.api import Gradebook

    course = course_id(batch.course)
    with (
        Gradebook(f"sqlite:///{root / 'gradebook.db'}", course) as src,
        Gradebook(f"sqlite:///{batch.course / 'gradebook.db'}", course) as dst,
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


def run(batch: Batch, students: list[str], progress: bool = True) -> list[Outcome]:
    """Grade *students* with ``batch.workers`` parallel workers; outcomes in input order."""
    return run_classes([(batch, students)], progress)[0]


def run_classes(
    classes: list[tuple[Batch, list[str]]],
    progress: bool = True,
    stop: threading.Event | None = None,
) -> list[list[Outcome]]:
    """Grade several assignments' classes through one pool of workers.

    One pool keeps every worker busy until the last notebook of all of them: a
    run per assignment would end each one with a tail in which a single slow
    notebook (an endless loop held to the cell timeout) runs alone. The
    workers' number is the first batch's (all must agree, as it sets each
    notebook's thread share); outcomes come per class, in input order, each
    with the second of the run at which it started (``started_seconds``).

    The solutions are timed (:func:`measure_limits`) side by side while the
    pool already grades the classes that are ready, with one worker fewer per
    solution still being timed (:mod:`grader.run.class_queue`).
    Once *stop* is set, no notebook starts any more and those in flight are
    ended (:func:`grade_student`); the outcomes of the notebooks graded to
    their end come back (so a class's list may be short), and the others are
    neither merged nor listed. A solution still being timed then runs to its
    end (at most the course's cell timeout per cell) before this returns.
    """
    workers = classes[0][0].workers
    if any(b.workers != workers for b, _ in classes):
        raise ValueError("the batches of one run must have the same number of workers")
    if stop is not None and stop.is_set():
        return [[] for _ in classes]  # stopped before it began: not even the solutions' runs
    cgroups.placement()  # before any worker starts: a move into its leaf moves the grader alone
    templates = [shared_template(b) for b, _ in classes]  # cheap; says at once what is missing
    waiting = ClassQueue([students for _, students in classes], workers)

    def timed(index: int, uid: int | None) -> None:
        batch = classes[index][0]
        try:
            measure_limits(batch)
        except Exception as error:  # noqa: BLE001  (the class is still graded, only slower)
            print(
                f"grader: {batch.assignment}: cell limits not measured ({error})", file=sys.stderr
            )
        handed_in = any(
            (batch.course / "submitted" / s / batch.assignment).is_dir() for s in classes[index][1]
        )
        try:  # only a class with something to grade needs its setting checked
            batch.refused = (handed_in and check_solution(batch, templates[index], uid, stop)) or ""
        finally:  # a class whose solution could not be timed has the course's limit per cell
            waiting.ready(index, cell_budgets.solution_seconds(batch.cell_budgets))

    own_uids = sandbox.own_user(classes[0][0].level)
    with (
        ThreadPoolExecutor(len(classes)) as timing,
        claim_uids(workers + len(classes) if own_uids else 0) as uids,
    ):
        for uid in uids:  # a killed run's cgroup of this id (grader.sandbox.box names them so)
            cgroups.remove_left_behind(f"grader-{uid}")
        for index in range(len(classes)):  # each solution's check has an id of its own
            timing.submit(timed, index, uids[workers + index] if uids else None)
        return _run_pool(classes, templates, waiting, uids[:workers], progress, stop)


def _run_pool(
    classes: list[tuple[Batch, list[str]]],
    templates: list[Path],
    waiting: ClassQueue,
    uids: list[int],
    progress: bool,
    stop: threading.Event | None,
) -> list[list[Outcome]]:
    """The pool of :func:`run_classes`: each worker grades as one of *uids* (if any)."""
    from tqdm import tqdm

    workers = classes[0][0].workers
    slots: queue.Queue[int | None] = queue.Queue()
    for slot in range(workers):
        slots.put(uids[slot] if uids else None)
    began = time.monotonic()

    def job() -> tuple[int, Outcome] | None:
        taken = waiting.take(stop)
        if taken is None:
            return None  # stopped before it started
        index, student = taken
        if classes[index][0].refused:  # the solution fails here: none is graded
            waiting.done()
            return index, Outcome(student, "failed", flags=[classes[index][0].refused])
        uid = slots.get()
        try:
            started = round(time.monotonic() - began, 1)
            outcome = grade_student(classes[index][0], student, templates[index], uid, stop)
            outcome.started_seconds = started
            return index, outcome
        finally:
            slots.put(uid)
            waiting.done()

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
        # each job takes whichever notebook goes next when a worker is free
        futures = [pool.submit(job) for _, students in classes for _ in students]
        for future in as_completed(futures):
            taken = future.result()
            bar.update()
            if taken is None or taken[1].status == "stopped":
                continue
            index, outcome = taken
            batch = classes[index][0]
            if outcome.status == "graded":
                try:
                    merge(batch, outcome)
                except Exception as error:  # noqa: BLE001  (reported, batch goes on)
                    outcome.status = "failed"
                    outcome.flags.append(f"merge: {type(error).__name__}: {error}")
            outcomes[index][outcome.student] = outcome
    ordered = []
    for (batch, students), graded in zip(classes, outcomes):
        ordered.append([graded[s] for s in students if s in graded])
        write_results(batch.work, batch.course, batch.assignment, ordered[-1])
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
