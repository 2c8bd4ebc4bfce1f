"""Grade a class as a Slurm job array: one student per array task, merged here afterwards.

Each task grades one student exactly as :func:`grader.batch.grade_student` does
on one machine (own course copy, sandboxed kernel) and leaves its outcome in
``<work>/<student>/outcome.json``; the grading folder must therefore be on a file
system the compute nodes share (the course folder usually is). This process
waits for the array (``sbatch --wait``) with a progress bar, then merges every
finished student into the gradebook. A task that died leaves no outcome: that
student is listed as not graded, with the command to grade them again.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from grader import batch as batch_mod
from grader.grade_record import write_results
from grader.processes import claim_uids
from grader.sandbox import own_user


def job_script(run: batch_mod.Batch, count: int, options: list[str]) -> str:
    """The sbatch script of the array (the settings travel in ``<work>/batch.json``)."""
    limit = max(1, (run.wall_seconds + 180) // 60)
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=grade-{run.assignment}",
        f"#SBATCH --array=0-{count - 1}%{run.workers}",
        f"#SBATCH --output={run.work}/slurm-%A_%a.out",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --time={limit}",
        *[f"#SBATCH {option}" for option in options],
        f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH",
        (
            f"exec {shlex.quote(sys.executable)} -m grader task "
            f'{shlex.quote(str(run.work / "batch.json"))} "$SLURM_ARRAY_TASK_ID"'
        ),
    ]
    return "\n".join(lines) + "\n"


def task(batch_file: Path, index: int) -> None:
    """One array task: grade the *index*-th student and write their outcome."""
    settings = json.loads(batch_file.read_text())
    students = settings.pop("students")
    run = batch_mod.Batch(
        **{k: Path(v) if k in ("course", "work") else v for k, v in settings.items()}
    )
    student = students[index]
    with claim_uids(1 if own_user(run.level) else 0) as uids:
        uid = uids[0] if uids else None
        outcome = batch_mod.grade_student(run, student, run.work / "template.db", uid)
    (run.work / student / "outcome.json").write_text(json.dumps(asdict(outcome)))


def run_slurm(
    run: batch_mod.Batch, students: list[str], options: list[str], progress: bool = True
) -> list[batch_mod.Outcome]:
    """Submit the array, wait for it, merge; outcomes in *students* order."""
    from tqdm import tqdm

    batch_mod.prepare(run)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(run).items()}
    settings["level"] = ""  # each node finds out what it can isolate
    settings["threads"] = 1  # each task has one CPU (--cpus-per-task=1)
    (run.work / "batch.json").write_text(json.dumps({**settings, "students": students}))
    for student in students:
        (run.work / student / "outcome.json").unlink(missing_ok=True)
    script = run.work / "grade.sbatch"
    script.write_text(job_script(run, len(students), options))
    submit = subprocess.Popen(
        ["sbatch", "--wait", "--parsable", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with tqdm(
        total=len(students),
        desc=f"grading {run.assignment} on Slurm",
        unit="student",
        disable=not progress,
    ) as bar:
        while submit.poll() is None:
            done = sum((run.work / s / "outcome.json").is_file() for s in students)
            bar.update(done - bar.n)
            time.sleep(1)
        bar.update(sum((run.work / s / "outcome.json").is_file() for s in students) - bar.n)
    out, err = submit.communicate()
    if not out.strip():
        raise SystemExit(f"sbatch refused the job array: {err.strip()}")
    outcomes = []
    for student in students:
        path = run.work / student / "outcome.json"
        if path.is_file():
            outcome = batch_mod.Outcome(**json.loads(path.read_text()))
        else:
            outcome = batch_mod.Outcome(
                student, status="failed", flags=["the Slurm task ended without a result"]
            )
        if outcome.status == "graded":
            try:
                batch_mod.merge(run, outcome)
            except Exception as error:  # noqa: BLE001  (reported, batch goes on)
                outcome.status = "failed"
                outcome.flags.append(f"merge: {type(error).__name__}: {error}")
        outcomes.append(outcome)
    write_results(run.work, run.course, run.assignment, outcomes)  # whole, with the record
    return outcomes
