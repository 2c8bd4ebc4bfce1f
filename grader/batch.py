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
import shutil
import signal
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader import sandbox
from grader.check import check_submission
from grader.flags import FLAGS_ENV

if TYPE_CHECKING:
    from traitlets.config import Config

_CONFIG = """\
# Made by grader.batch for one student's course copy; do not edit.
c = get_config()  # noqa: F821
load_subconfig({main!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db_url!r}
c.Execute.kernel_name = {kernel!r}
# Unix sockets in the runtime folder: the kernel has no network.
c.KernelManager.transport = "ipc"
c.KernelManager.ip = {socket!r}
c.KernelManager.connection_file = {connection!r}
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
    level: str = ""
    #: Threads per notebook for the numerical libraries; 0: this machine's cores
    #: shared out among the workers.
    threads: int = 0
    #: Whether notebooks see the GPUs; None: yes, unless the course's
    #: ``c.Grader.without_gpu`` lists the assignment.
    gpu: bool | None = None

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
        blocked = sandbox.unreachable(batch.work, sandbox.BASE_UID)
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
    (batch.work / "jupyter").mkdir(exist_ok=True)
    _traversable(batch.work / "jupyter")
    return template


def student_copy(batch: Batch, student: str, template: Path, uid: int | None) -> Path:
    """A course folder for one student: config, gradebook copy, sources, their submission."""
    root = batch.work / student
    if root.exists():
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
    shutil.copytree(
        batch.course / "submitted" / student / batch.assignment,
        root / "submitted" / student / batch.assignment,
    )
    for private in ("solutions", "submitted"):
        (root / private).chmod(0o700)
    runtime = root / "runtime"
    runtime.mkdir(mode=0o700)
    home = runtime / "home"
    home.mkdir(mode=0o700)
    if uid is not None:
        for folder in (runtime, home):
            os.chown(folder, uid, uid)
    policy = sandbox.Policy(
        level=batch.level,
        uid=uid,
        memory_bytes=batch.memory_bytes,
        cpu_seconds=batch.cpu_seconds,
        processes=batch.processes,
        threads=batch.threads,
        gpu=bool(batch.gpu),
        home=str(home),
        hide=[str(batch.course), str(batch.work), "/root", "/home", "/tmp", "/var/tmp", "/dev/shm"],
        readonly=sandbox.course_environment_paths(private=[batch.course, batch.work]),
        writable=[str(runtime)],
    )
    policy.save(root / "policy.json")
    kernel = sandbox.install_kernelspec(root / "jupyter", root / "policy.json")
    (root / "nbgrader_config.py").write_text(
        _CONFIG.format(
            main=str(batch.course / "nbgrader_config.py"),
            root=str(root),
            db_url=f"sqlite:///{root / 'gradebook.db'}",
            kernel=kernel,
            socket=str(runtime / "kernel"),
            connection=str(runtime / "kernel.json"),
        )
    )
    (root / "nbgrader_config.py").chmod(0o600)
    return root


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


def grade_student(batch: Batch, student: str, template: Path, uid: int | None) -> Outcome:
    """Check, then autograde one student in their own copy; never raises."""
    started = time.monotonic()
    outcome = Outcome(student)
    try:
        root = student_copy(batch, student, template, uid)
        outcome.flags += check_submission(
            root / "submitted" / student / batch.assignment, batch.assignment, template, repair=True
        )
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["JUPYTER_PATH"] = f"{root / 'jupyter'}{os.pathsep}{env.get('JUPYTER_PATH', '')}"
        env["JUPYTER_RUNTIME_DIR"] = str(root / "runtime")
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
            sandbox.kill_user_processes(uid)
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
                f.startswith("memory:") or "limit per notebook" in f for f in outcome.flags
            )
            if not stopped and proc.exitcode not in (0, None):
                outcome.flags.append(f"grading process ended with status {proc.exitcode}")
            elif not stopped and result:
                outcome.flags.append(
                    "nbgrader: " + (result["error"] or result["log"]).strip().splitlines()[-1][:200]
                )
    except Exception as error:  # noqa: BLE001  (one student's problem must not stop the class)
        outcome.status = "failed"
        outcome.flags.append(f"{type(error).__name__}: {error}")
    outcome.seconds = round(time.monotonic() - started, 1)
    return outcome


def merge(batch: Batch, outcome: Outcome) -> None:
    """Copy one graded student's scores and autograded folder into the course."""
    from sqlalchemy.exc import SAWarning

    root = batch.work / outcome.student
    # nbgrader's own update_or_create_submission warns about its session (harmless).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)
        _merge_scores(batch, outcome, root)
    graded = root / "autograded" / outcome.student / batch.assignment
    target = batch.course / "autograded" / outcome.student / batch.assignment
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(graded, target)


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
    from tqdm import tqdm

    workers = classes[0][0].workers
    if any(b.workers != workers for b, _ in classes):
        raise ValueError("the batches of one run must have the same number of workers")
    templates = [prepare(b) for b, _ in classes]
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def job(batch: Batch, student: str, template: Path) -> Outcome:
        slot = slots.get()
        try:
            own_uid = batch.level in ("bwrap+uid", "uid")
            uid = sandbox.BASE_UID + slot if own_uid else None
            return grade_student(batch, student, template, uid)
        finally:
            slots.put(slot)

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
