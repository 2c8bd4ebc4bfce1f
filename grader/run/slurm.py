"""Grade a class as a Slurm job array: one student per array task, merged here afterwards.

Each task grades one student exactly as :func:`grader.run.batch.grade_student` does
on one machine (own course copy, sandboxed kernel) and leaves its outcome in
``<work>/<student>/outcome.json``; the grading folder must therefore be on a file
system the compute nodes share (the course folder usually is). Before the array
is submitted, the solution is graded here as the students will be
(:mod:`grader.run.setup_check`): a setting where it fails grades nobody. This
process then watches the array in the queue (:mod:`grader.run.slurm_queue`) with a
progress bar, says in one line when its tasks cannot start, and merges every
finished student into the gradebook. A task that died leaves no outcome: that
student is listed as not graded, with the command to grade them again.

The array never runs on unwatched: a SIGINT or SIGTERM of this process cancels
it, then merges what finished; after a SIGKILL, the next run of the
assignment finds the array (still queued or running, or ended since) and
attaches to it: it waits for it and merges its results rather than cancel
work that grades the same submissions, and submits only the students it
does not grade.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from demos.cluster import schedulers
from grader.run import batch as batch_mod
from grader.run import settings
from grader.run import slurm_queue as queue
from grader.run.grade_record import write_json, write_results
from grader.run.setup_check import check_solution
from grader.sandbox import cgroups
from grader.sandbox.policy import own_user
from grader.sandbox.processes import claim_uids

#: Seconds between two looks at the queue.
POLL = 2.0


def job_script(run: batch_mod.Batch, count: int, options: list[str]) -> str:
    """The sbatch script of the array (the settings travel in ``<work>/batch.json``).

    Its name, tag (the grading folder, found again by :mod:`grader.run.slurm_queue`),
    one CPU per task and run-time limit are asked in the words of the course's
    scheduler description (deploy/session.yml, :mod:`demos.cluster.schedulers`),
    with the description's options for every course job; *options* (``--slurm-option``)
    come last and may override them.
    """
    table = schedulers.description()["scheduler_options"]["slurm"]
    values = {
        "job_name": queue.job_name(run.course, run.assignment),
        "tag": run.work,
        "cores": 1,  # the tasks grade with one thread (_submit: settings["threads"])
        "walltime": schedulers.walltime(max(1, (run.wall_seconds + 180) // 60)),
    }
    found = schedulers.words(table, ("always", "job_name", "tag", "cores", "time"), values)
    lines = [
        "#!/bin/bash",
        *schedulers.as_directives(found, table),
        f"#SBATCH --array=0-{count - 1}%{run.workers}",
        f"#SBATCH --output={run.work}/slurm-%A_%a.out",
        *[f"#SBATCH {option}" for option in options],
        f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH",
        (
            f"exec {shlex.quote(sys.executable)} -m grader task "
            f'{shlex.quote(str(run.work / "batch.json"))} "$SLURM_ARRAY_TASK_ID"'
        ),
    ]
    return "\n".join(lines) + "\n"


def _settings(batch_file: Path) -> tuple[batch_mod.Batch, list[str]]:
    settings = json.loads(batch_file.read_text())
    students = settings.pop("students")
    run = batch_mod.Batch(
        **{k: Path(v) if k in ("course", "work") else v for k, v in settings.items()}
    )
    return run, students


def task(batch_file: Path, index: int) -> None:
    """One array task: grade the *index*-th student and write their outcome (whole or not)."""
    run, students = _settings(batch_file)
    student = students[index]
    with claim_uids(1 if own_user(run.level) else 0) as uids:
        uid = uids[0] if uids else None
        outcome = batch_mod.grade_student(run, student, run.work / "template.db", uid)
    write_json(run.work / student / "outcome.json", asdict(outcome))


def run_slurm(
    run: batch_mod.Batch,
    students: list[str],
    options: list[str],
    progress: bool = True,
    stop: threading.Event | None = None,
) -> list[batch_mod.Outcome]:
    """Grade *students* as an array (after merging an earlier run's, if one is left).

    The outcomes of an earlier run's array come first, then those of the
    students it did not grade, in *students* order. Once *stop* is set, the
    array is cancelled and only what finished is merged and returned.
    """
    stop = stop or threading.Event()
    if stop.is_set():  # stopped before this class began: its queue is left as it is
        return []
    outcomes = _earlier_array(run, progress, stop)
    done = {o.student for o in outcomes}
    rest = [s for s in students if s not in done]
    if rest and not stop.is_set():
        outcomes += _submit(run, rest, options, progress, stop)
    return outcomes


def _earlier_array(
    run: batch_mod.Batch, progress: bool, stop: threading.Event
) -> list[batch_mod.Outcome]:
    """Attach to the array an earlier (killed) run left, or merge what it left; [] if none."""
    name = queue.job_name(run.course, run.assignment)
    try:
        record = queue.read_record(run.course, run.assignment)
        live = queue.arrays(name)
    except queue.Unanswered as error:
        raise SystemExit(
            f"grader: cannot tell whether an earlier Slurm array of {run.assignment} is still "
            f"queued or running ({error}); nothing submitted, so as not to grade its "
            "folders twice"
        ) from None
    if not live and record is None:
        return []
    job = record["job"] if record else next(iter(live))
    if len(live) > 1 or (live and job not in live):
        raise SystemExit(
            f"grader: cannot tell which Slurm array of {run.assignment} to attach to (queued or "
            f"running: {', '.join(live)}; recorded: {record['job'] if record else 'none'}); "
            f"scancel those not wanted, then run again"
        )
    work = Path(live[job][0].work if live else record["work"])
    if not (work / "batch.json").is_file():
        raise SystemExit(
            f"grader: the Slurm array {job} of an earlier run of {run.assignment} has no "
            f"settings at {work / 'batch.json'}: scancel {job} if it is still there, then "
            f"remove {queue.record_path(run.course, run.assignment)} and run again"
        )
    earlier, students = _settings(work / "batch.json")
    by = (
        f"submitted by pid {record['pid']} on {record['host']}, {record['submitted']}"
        if record
        else "no record of who submitted it"
    )
    if live:
        print(
            f"grader: attaching to the Slurm array {job} of an earlier run of "
            f"{run.assignment} ({by}; that run is gone): it grades {len(students)} students "
            "in these folders, so it is waited for and merged, not cancelled or doubled",
            file=sys.stderr,
        )
        if changed := limits_changed(earlier, run):
            print(
                f"grader: the array {job} grades with that run's limits, not this run's "
                f"({'; '.join(changed)}): to grade its students with these, scancel {job}, "
                "then run this command again",
                file=sys.stderr,
            )
        _watch(earlier, job, students, progress, stop)
    else:
        print(
            f"grader: merging the results of the Slurm array {job} of an earlier run of "
            f"{run.assignment} ({by}), which ended while nobody watched it",
            file=sys.stderr,
        )
    return _merge_all(earlier, students, stop)


def limits_changed(earlier: batch_mod.Batch, run: batch_mod.Batch) -> list[str]:
    """The limits per notebook that *run* sets otherwise than the *earlier* array graded with,
    each as ``--flag there, here`` (workers, threads and the isolation level are each node's
    own, so they do not count)."""
    changed = []
    for name in ("wall_seconds", "memory_bytes", "cpu_seconds", "processes", "disk_bytes", "gpu"):
        there, here = getattr(earlier, name), getattr(run, name)
        if there != here:
            trait = settings.Grader.class_traits().get(name)
            flag = trait.metadata["flag"] if trait is not None else "GPUs in the notebooks:"
            show = settings.size_label if isinstance(trait, settings.Size) else str
            changed.append(f"{flag} {show(there)} there, {show(here)} here")
    return changed


def _submit(
    run: batch_mod.Batch,
    students: list[str],
    options: list[str],
    progress: bool,
    stop: threading.Event,
) -> list[batch_mod.Outcome]:
    """Check the setting, submit the array, watch it, merge."""
    # In a thread of its own, as in grader.run.batch: the libraries that time and grade the
    # solution put the main thread's SIGINT handler back to KeyboardInterrupt.
    with ThreadPoolExecutor(1) as pool:
        run.refused = pool.submit(_check_setting, run, stop).result()
    if run.refused:  # nothing submitted: the tasks would grade everyone as the solution fails
        outcomes = [batch_mod.Outcome(s, "failed", flags=[run.refused]) for s in students]
        write_results(run.work, run.course, run.assignment, outcomes)
        return outcomes
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(run).items()}
    settings["level"] = ""  # each node finds out what it can isolate
    settings["threads"] = 1  # each task has one CPU (--cpus-per-task=1)
    (run.work / "batch.json").write_text(json.dumps({**settings, "students": students}))
    for student in students:
        (run.work / student / "outcome.json").unlink(missing_ok=True)
    script = run.work / "grade.sbatch"
    script.write_text(job_script(run, len(students), options))
    submit = subprocess.run(
        ["sbatch", "--parsable", str(script)], capture_output=True, text=True, check=False
    )
    job = submit.stdout.strip().split(";")[0]
    if submit.returncode != 0 or not job:
        raise SystemExit(f"sbatch refused the job array: {submit.stderr.strip()}")
    queue.write_record(run.course, run.assignment, job, run.work, students)
    _watch(run, job, students, progress, stop)
    return _merge_all(run, students, stop)


def _check_setting(run: batch_mod.Batch, stop: threading.Event) -> str:
    """Why the class cannot be graded as set up (:mod:`grader.run.setup_check`), or ""."""
    template = batch_mod.prepare(run)
    cgroups.placement()
    with claim_uids(1 if own_user(run.level) else 0) as uids:
        for uid in uids:  # a killed run's cgroup of this id (grader.sandbox.box names them so)
            cgroups.remove_left_behind(f"grader-{uid}")
        return check_solution(run, template, uids[0] if uids else None, stop) or ""


def _watch(
    run: batch_mod.Batch,
    job: str,
    students: list[str],
    progress: bool,
    stop: threading.Event,
) -> None:
    """Wait until the array *job* has no task left; cancel it once *stop* is set."""
    from tqdm import tqdm

    name = queue.job_name(run.course, run.assignment)
    began, said, unanswered = time.monotonic(), False, False
    with tqdm(
        total=len(students),
        desc=f"grading {run.assignment} on Slurm",
        unit="student",
        disable=not progress,
    ) as bar:
        while True:
            if stop.is_set():
                try:
                    cancelled = queue.cancel(job, name)
                except queue.Unanswered:
                    cancelled = False
                if not cancelled:
                    print(
                        f"grader: the Slurm array {job} may still be there: scancel {job}",
                        file=sys.stderr,
                    )
                break
            try:
                tasks = queue.arrays(name).get(job, [])
            except queue.Unanswered as error:  # a busy or restarting controller: ask again
                tasks = None
                if not unanswered:
                    unanswered = True
                    print(
                        f"grader: no answer about the Slurm array {job} ({error}); still waiting",
                        file=sys.stderr,
                        flush=True,
                    )
            if tasks == []:
                break
            done = sum((run.work / s / "outcome.json").is_file() for s in students)
            bar.update(done - bar.n)
            reason = not said and tasks and queue.why_stuck(tasks, time.monotonic() - began)
            if reason:  # once: the reason's wording changes as the controller looks again
                said = True
                nodes = queue.unavailable_nodes(reason)
                bar.clear()
                print(
                    f"grader: the Slurm array {job} of {run.assignment} cannot start: {reason} "
                    f"(squeue){f' ({nodes})' if nodes else ''}; still waiting (Ctrl-C cancels "
                    "it and lists who to grade again)",
                    file=sys.stderr,
                    flush=True,
                )
            stop.wait(POLL)
        bar.update(sum((run.work / s / "outcome.json").is_file() for s in students) - bar.n)


def _merge_all(
    run: batch_mod.Batch, students: list[str], stop: threading.Event
) -> list[batch_mod.Outcome]:
    """Merge each finished student's outcome; those without one are listed as not graded."""
    missing = (
        "not graded: the run was stopped and its Slurm array cancelled"
        if stop.is_set()
        else "the Slurm task ended without a result"
    )
    outcomes = []
    for student in students:
        path = run.work / student / "outcome.json"
        if path.is_file():
            outcome = batch_mod.Outcome(**json.loads(path.read_text()))
        else:
            outcome = batch_mod.Outcome(student, status="failed", flags=[missing])
        if outcome.status == "graded":
            try:
                batch_mod.merge(run, outcome)
            except Exception as error:  # noqa: BLE001  (reported, batch goes on)
                outcome.status = "failed"
                outcome.flags.append(f"merge: {type(error).__name__}: {error}")
        outcomes.append(outcome)
    write_results(run.work, run.course, run.assignment, outcomes)  # whole, with the record
    queue.record_path(run.course, run.assignment).unlink(missing_ok=True)  # merged
    return outcomes
