"""Grade one student in a course copy of their own, in a process with a wall-time limit.

:mod:`grader.run.batch` runs many of these at once and merges each result into the
real gradebook; :mod:`grader.run.slurm` runs one per array task. Nothing here
writes outside the student's copy (``<work>/<student>/``), and
:func:`grade_student` never raises: one student's problem is that student's
``failed`` row, with the reason, not the class's.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import re
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader.intake.screen import screen_submission
from grader.run.grade_record import notebook_digests
from grader.sandbox import box as boxes
from grader.sandbox import environment as sandbox_environment
from grader.sandbox import isolation as sandbox
from grader.sandbox.flags import FLAGS_ENV
from grader.sandbox.processes import kill_user_processes
from grader.sandbox.safe_files import copy_tree

if TYPE_CHECKING:
    from grader.run.settings import Batch

_CONFIG = """\
# Made by grader.run.one_student for one student's course copy; do not edit.
c = get_config()  # noqa: F821
load_subconfig({main!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db_url!r}
# The run's limits and this worker's user id; the sandbox is made in box/.
c.GuardedExecute.sandbox_policy = {policy!r}
c.GuardedExecute.box_folder = {box!r}
c.GuardedExecute.cell_budgets = {budgets!r}
c.GuardedExecute.timings_file = {timings!r}
"""


@dataclass
class Outcome:
    """One student's result, as the summary table shows it.

    *status*: ``graded``, ``failed`` (with the reason in *flags*), ``no
    submission``, or ``stopped`` (the run was stopped while it was graded).
    """

    student: str
    status: str = "not graded"
    score: float | None = None
    max_score: float | None = None
    seconds: float = 0.0
    flags: list[str] = field(default_factory=list)
    #: seconds by phase (kernel start, cells in the kernel, hidden tests, other), when known
    phases: dict[str, float] = field(default_factory=dict)
    #: when its grading started, in seconds from the start of the run (set by grader.run.batch)
    started_seconds: float = 0.0
    #: sha256 of each submitted notebook, as graded (grader.run.grade_record): which version
    #: of the submission this grade belongs to
    submitted_sha256: dict[str, str] = field(default_factory=dict)


def traversable(path: Path) -> None:
    """Others may pass through *path* but not list it (the sandbox user walks to its folder)."""
    path.chmod(0o711)


def student_copy(
    batch: Batch, student: str, template: Path, uid: int | None, submitted: Path | None = None
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
    traversable(root)
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
        submitted or batch.course / "submitted" / student / batch.assignment,
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
            timings=str(root / "timings.json"),
        )
    )
    (root / "nbgrader_config.py").chmod(0o600)
    return root, [f"submission file {line}" for line in left_out]


@functools.cache
def _forkserver(threads: int) -> multiprocessing.context.BaseContext:
    """The context whose processes fork from one server with nbgrader already imported.

    The server starts with the notebooks' share of the cores for the numerical
    libraries (*threads*): NumPy sizes its BLAS thread pool when it is imported
    there, and a hidden test's reference computation with one thread per core
    of the machine, in sixteen grading processes at once, spins more than it works.
    """
    os.environ.update(dict.fromkeys(sandbox_environment.THREAD_VARIABLES, str(threads)))
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["grader.integration.autograde_one"])
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
    ("CellTimeoutError", "a cell ran past its time limit and went on after the interrupt"),
)


def failure_reason(log: str) -> str:
    """One line that says why nbgrader could not grade a notebook, from its log."""
    machinery = re.findall(r"GradingMachineryError: (.+)", log)
    if machinery:  # the grader's failure, not the notebook's: its own sentence says which
        return "the grading machinery failed (graded again, not scored): " + machinery[-1][:200]
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


def _wait(
    proc: multiprocessing.process.BaseProcess, seconds: float, stop: threading.Event | None
) -> str | None:
    """Wait for the grading process to end: ``"wall"`` or ``"stop"`` if it was cut short, else None.

    With a *stop* event, it is looked at twice a second, so that a grading run
    that is stopped ends its notebooks in flight within a second.
    """
    end = time.monotonic() + seconds
    while proc.is_alive():
        left = end - time.monotonic()
        if left <= 0:
            return "wall"
        if stop is not None and stop.is_set():
            return "stop"
        proc.join(timeout=min(left, 0.5) if stop is not None else left)
    return None


#: The flags of a notebook that went over its memory or files limit (the sandbox's kinds).
_LIMIT_FLAGS = ("memory:", "disk:")


def _flags_read(path: Path) -> list[str]:
    """The flags written while the notebook was graded, one per limit kind: the watcher that
    stopped a notebook and the count when it ended may both see the same files."""
    flags, kinds = [], set()
    for line in path.read_text().splitlines():
        flag = json.loads(line)
        kind = flag["grade_id"]
        if f"{kind}:" in _LIMIT_FLAGS:
            if kind in kinds:
                continue
            kinds.add(kind)
        flags.append(f"{kind}: {flag['reason']}")
    return flags


def grade_student(
    batch: Batch,
    student: str,
    template: Path,
    uid: int | None,
    stop: threading.Event | None = None,
    submitted: Path | None = None,
) -> Outcome:
    """Check, then autograde one student in their own copy; never raises.

    When *stop* is set while the notebook is graded, it is ended as at the
    wall-time limit (its process group, its sandbox user's processes, its
    box and cgroup) and comes back ``stopped``. *submitted*: the folder graded
    as the student's hand-in (default: theirs in the course's ``submitted/``).
    """
    started = time.monotonic()
    outcome = Outcome(student)
    submitted = submitted or batch.course / "submitted" / student / batch.assignment
    if not submitted.is_dir():
        outcome.status = "no submission"
        return outcome
    try:
        root, outcome.flags = student_copy(batch, student, template, uid, submitted)
        outcome.submitted_sha256 = notebook_digests(root / "submitted" / student / batch.assignment)
        outcome.flags += screen_submission(
            root / "submitted" / student / batch.assignment, batch.assignment, template, repair=True
        )
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["JUPYTER_RUNTIME_DIR"] = str(root / "jupyter-runtime")
        env[FLAGS_ENV] = str(root / "flags.jsonl")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        # the grading process and its simulator: the notebooks' share of the cores, too
        env |= dict.fromkeys(sandbox_environment.THREAD_VARIABLES, str(batch.threads))
        from grader.integration import autograde_one  # nbgrader's imports: only when grading

        proc = _forkserver(batch.threads).Process(
            target=autograde_one.grade,
            args=(str(root), batch.assignment, student, env, str(root / "autograde.log")),
        )
        proc.start()
        cut = _wait(proc, batch.wall_seconds, stop)
        if cut is not None:
            _kill_group(proc.pid)
            proc.join()
        if cut == "wall":
            outcome.flags.append(f"stopped after the {batch.wall_seconds} s limit per notebook")
        if uid is not None:
            kill_user_processes(uid)
        # Killed before nbgrader took its sandbox apart: do it here.
        outcome.flags += [f"{kind}: {why}" for kind, why in boxes.close_left_behind(root / "box")]
        if cut == "stop":
            outcome.status = "stopped"
            outcome.flags.append("the grading run was stopped while this notebook was graded")
            outcome.seconds = round(time.monotonic() - started, 1)
            return outcome
        if (root / "timings.json").is_file():
            outcome.phases = json.loads((root / "timings.json").read_text())
        result_file = root / "result.json"
        result = json.loads(result_file.read_text()) if result_file.is_file() else None
        if (root / "flags.jsonl").is_file():
            outcome.flags += _flags_read(root / "flags.jsonl")
        # A notebook over a limit is not graded, whether the limit stopped it or it was
        # found over it when it ended; the limit is the reason, nbgrader's error only echoes it.
        over_limit = any(f.startswith(_LIMIT_FLAGS) for f in outcome.flags)
        if result and result["success"] and not over_limit:
            outcome.status = "graded"
        else:
            outcome.status = "failed"
            stopped = over_limit or any("limit per notebook" in f for f in outcome.flags)
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
