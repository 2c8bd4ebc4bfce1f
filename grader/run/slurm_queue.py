"""The Slurm job array of a grading run as the queue shows it: found again, watched, cancelled.

The process that submits the array (``autograde --slurm``) is what merges its
results, and it may die (SIGKILL, a closed terminal) while the array goes on.
The assignment's run lock (:mod:`grader.run.run_lock`) dies with it, so the next
run of the assignment starts while the orphan array still grades in the same
folders. To find it, every array of an assignment carries a job name unique to
the course folder and the assignment (:func:`job_name`) and its grading folder
as its comment; and a record beside the run lock (:func:`record_path`) keeps
its id from submission until its results are merged, so an array that ended
while nobody watched is merged too. When the queue cannot answer, nothing is
guessed: :class:`Unanswered`.

The queue also says why tasks wait (squeue's reason): a drained or down node,
a partition that is down, or no resources for a long time are said in one
line (:func:`why_stuck`) rather than waited on in silence.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from demos.cluster import schedulers
from grader.run.grade_record import write_json

#: Reasons a pending task waits as usual: its turn, the array's own limit of tasks at once.
USUAL = {"None", "Priority", "JobArrayTaskLimit", "BeginTime", "Dependency", "Resources"}
#: Usual reasons that still deserve a line once no task has run for this long (seconds).
PENDING_BOUND = 120.0


#: What :func:`write_record` keeps.
RECORD_KEYS = {"job", "work", "students", "pid", "host", "submitted"}


class Unanswered(RuntimeError):
    """squeue or scancel gave no answer (the controller is down or too busy)."""


@dataclass
class Task:
    """One line of squeue for the array: a task or a range of pending ones."""

    array: str  # the array's job id (squeue's %F)
    state: str  # PENDING, RUNNING, COMPLETING, ...
    reason: str  # why it is pending ("None" once it runs)
    work: str  # the grading folder (the job's comment)


def job_name(course: Path, assignment: str) -> str:
    """The name of *assignment*'s arrays for the course folder *course* (the same each run)."""
    digest = hashlib.sha256(str(course.resolve()).encode()).hexdigest()[:10]
    return f"{schedulers.description()['job_names']['grader']}-{assignment}-{digest}"


def record_path(course: Path, assignment: str) -> Path:
    """Where the id of the assignment's array is kept until its results are merged."""
    return course / "grading" / f"{assignment}.slurm.json"


def write_record(course: Path, assignment: str, job: str, work: Path, students: list[str]) -> None:
    """Note the array *job* just submitted (with who submitted it, for the next run's message)."""
    write_json(
        record_path(course, assignment),
        {
            "job": job,
            "work": str(work),
            "students": students,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "submitted": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        },
    )


def read_record(course: Path, assignment: str) -> dict | None:
    """The record of an array whose results are not merged yet, or None."""
    path = record_path(course, assignment)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise Unanswered(f"{path} unreadable ({error})") from None
    if not isinstance(record, dict) or not RECORD_KEYS <= record.keys():
        raise Unanswered(f"{path} is not a record of an array")
    return record


def _slurm(args: list[str], tries: int = 4) -> str:
    """A Slurm command's output; a busy controller gets a few more tries, then Unanswered."""
    for attempt in range(tries):
        try:
            result = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            last = str(error)
        else:
            if result.returncode == 0:
                return result.stdout
            last = result.stderr.strip() or f"exit status {result.returncode}"
        if attempt < tries - 1:
            time.sleep(1 + attempt)
    raise Unanswered(f"{args[0]}: {last.splitlines()[-1] if last else 'no answer'}")


def arrays(name: str) -> dict[str, list[Task]]:
    """The unfinished tasks of every array called *name*, by array id."""
    out = _slurm(["squeue", "-h", f"--name={name}", "-o", "%F|%T|%r|%k"])
    found: dict[str, list[Task]] = {}
    for line in out.splitlines():
        array, state, reason, work = (line.split("|", 3) + ["", "", ""])[:4]
        found.setdefault(array, []).append(Task(array, state, reason, work))
    return found


def cancel(job: str, name: str, seconds: float = 120.0) -> bool:
    """scancel the array *job* (called *name*), wait until none of it is left; whether so."""
    _slurm(["scancel", job])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if job not in arrays(name):
            return True
        time.sleep(1)
    return False


def why_stuck(tasks: list[Task], waited: float) -> str | None:
    """Why the array's tasks cannot start (squeue's reason), or None while they start as usual.

    A reason outside :data:`USUAL` (a drained or down node, a partition down,
    a node that cannot be had) is said at once; no resources or a low priority
    only once nothing of the array has run for :data:`PENDING_BOUND` seconds.
    """
    if any(t.state != "PENDING" for t in tasks):
        return None
    reasons = [t.reason for t in tasks if t.reason not in ("JobArrayTaskLimit", "None")]
    unusual = [r for r in reasons if r.split(",")[0] not in USUAL]
    if unusual:
        return unusual[0]
    if reasons and waited > PENDING_BOUND:
        return f"{reasons[0]} for {waited:.0f} s"
    return None


def unavailable_nodes(reason: str, most: int = 3) -> str:
    """The drained or down nodes behind a *reason* that names nodes, with sinfo's reason for
    each (``vm: drained, disk swap``); "" when the reason is not about nodes or sinfo says none."""
    if not any(word in reason for word in ("ReqNodeNotAvail", "DRAINED", "DOWN")):
        return ""
    named = reason.partition("UnavailableNodes:")[2].strip()
    args = ["sinfo", "-h", "-N", "-t", "drain,drng,down,fail,maint", "-o", "%N|%T|%E"]
    try:
        out = _slurm([*args, *(["-n", named] if named else [])], tries=1)
    except Unanswered:
        return ""
    nodes = sorted({tuple(line.split("|", 2)) for line in out.splitlines() if line.count("|") == 2})
    shown = [f"{node}: {state}, {why}" for node, state, why in nodes[:most]]
    more = f" and {len(nodes) - most} more" if len(nodes) > most else ""
    return "; ".join(shown) + more
