"""``python -m grader autograde --slurm`` stopped, killed, held up or badly set up: real Slurm.

One course, one local cluster (tests/slurm), two students of simt whose right
scores are known: alice hands in the solution (10/10), bob the blank release
(0/10). The array runs one task at a time (``--workers 1``), so alice's task
ends before bob's starts. Each ending is checked for what it must say (one line
for a queue that cannot start, the table, the command that grades again), what
it must not leave (a job in the queue, a process in the course, the array's
record), and for the scores it merged.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from local_cluster import LocalCluster
from nbgrader_driver import (
    assert_all_succeeded,
    hand_in,
    make_course,
    nbgrader_env,
    run_nbgrader,
    simt_solution_losing_two_points,
)
from run_leftovers import run_processes

from grader.run.slurm_queue import job_name, record_path
from helpers import needs_local_slurm

pytestmark = pytest.mark.slow
ASSIGNMENT = "simt"
GRADE = ["autograde", ASSIGNMENT, "--slurm", "--workers", "1", "--wall", "120"]
RIGHT = {"alice": "10/10", "bob": "0/10"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, LocalCluster]]:
    needs_local_slurm()
    root = make_course(tmp_path_factory.mktemp("slurmstop"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))
    hand_in(root, "alice", ASSIGNMENT, root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    hand_in(root, "bob", ASSIGNMENT, root / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as cluster:
        yield root, cluster


class Grader:
    """``python -m grader autograde`` in the background, its stderr readable while it runs."""

    def __init__(self, root: Path, cluster: LocalCluster, args: list[str]) -> None:
        self.root, self.err = root, root / f"stderr-{time.monotonic_ns()}.txt"
        with self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grader", "--course", str(root), *args],
                cwd=root,
                env={**nbgrader_env(), "SLURM_CONF": cluster.env["SLURM_CONF"]},
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )

    def stderr(self) -> str:
        return self.err.read_text()

    def finish(self, seconds: float = 400) -> tuple[int, str, str]:
        try:
            out, _ = self.process.communicate(timeout=seconds)
        finally:
            self.process.kill()
            self.process.wait()
        return self.process.returncode, out, self.stderr()


def _wait_for(condition: Callable[[], object], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.3)
    return False


def _rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if line.startswith(tuple(RIGHT))}


def _arrays(root: Path) -> set[str]:
    """The ids of every array whose tasks ran in the grading folder."""
    names = (root / "grading" / ASSIGNMENT).glob("slurm-*_*.out")
    return {re.match(r"slurm-(\d+)_", p.name).group(1) for p in names}


def _running_task(cluster: LocalCluster, root: Path) -> bool:
    name = job_name(root, ASSIGNMENT)
    states = subprocess.run(
        ["squeue", "-h", f"--name={name}", "-o", "%T"],
        env=cluster.env,
        capture_output=True,
        text=True,
        check=False,
    )
    return "RUNNING" in states.stdout


def _assert_nothing_left(root: Path, cluster: LocalCluster) -> None:
    assert _wait_for(lambda: not cluster.squeue().strip(), 60), cluster.squeue()
    left = [] if _wait_for(lambda: not run_processes(root), 30) else run_processes(root)
    for line in left:  # not to be left to the next test
        os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert not left, left
    assert not record_path(root, ASSIGNMENT).exists()


def test_a_solution_that_fails_in_the_sandbox_submits_no_array(setup) -> None:
    root, cluster = setup
    with simt_solution_losing_two_points(root):
        code, out, err = Grader(root, cluster, GRADE).finish()
    refusal = [line for line in err.splitlines() if "not graded:" in line]
    assert code == 1 and len(refusal) == 1, out + err[-3000:]
    assert "the solution scores 8/10 in the grading sandbox" in refusal[0], refusal
    assert not _arrays(root), "an array was submitted"
    assert all(" failed " in row for row in _rows(out).values()) and len(_rows(out)) == 2, out
    assert f"autograde {ASSIGNMENT} --student alice,bob" in out
    _assert_nothing_left(root, cluster)


def test_a_drained_node_is_said_in_one_line_and_ctrl_c_cancels_the_array(setup) -> None:
    root, cluster = setup
    node = f"nodename={cluster.hostname}"
    update = ["scontrol", "update", node]
    subprocess.run([*update, "state=drain", "reason=disk swap"], env=cluster.env, check=True)
    try:
        grader = Grader(root, cluster, GRADE)
        said = _wait_for(lambda: "cannot start" in grader.stderr(), 300)
        grader.process.send_signal(signal.SIGINT)
        code, out, err = grader.finish(120)
    finally:
        subprocess.run([*update, "state=resume"], env=cluster.env, check=True)
    lines = [line for line in err.splitlines() if "cannot start" in line]
    assert said and len(lines) == 1, err[-3000:]
    assert "ReqNodeNotAvail" in lines[0] or "DRAINED" in lines[0], lines
    assert f"({cluster.hostname}: drained, disk swap)" in lines[0], lines
    assert code == 130, out + err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert f"autograde {ASSIGNMENT} --student alice,bob" in out, out
    assert "student" in out.splitlines()[0] and len(_rows(out)) == 2, out
    _assert_nothing_left(root, cluster)


def test_sigterm_cancels_the_array_and_merges_the_finished_student(setup) -> None:
    root, cluster = setup
    grader = Grader(root, cluster, GRADE)
    alice = root / "grading" / ASSIGNMENT / "alice" / "outcome.json"
    try:  # alice's task done, bob's running: one merged, one cancelled
        began = _wait_for(lambda: alice.is_file() and _running_task(cluster, root), 400)
    finally:
        grader.process.send_signal(signal.SIGTERM)
    code, out, err = grader.finish(180)
    assert began, err[-3000:]
    assert code == 143, out + err[-3000:]
    rows = _rows(out)
    assert "10/10" in rows["alice"] and " graded " in rows["alice"], out
    assert " failed " in rows["bob"] and "cancelled" in rows["bob"], out
    assert f"autograde {ASSIGNMENT} --student bob" in out, out
    assert "Traceback" not in err, err[-3000:]
    _assert_nothing_left(root, cluster)


def _killed_after_submitting(root: Path, cluster: LocalCluster) -> str:
    """Start a run, SIGKILL it once its array runs (no handler: the array goes on); its id."""
    killed = Grader(root, cluster, GRADE)
    record = record_path(root, ASSIGNMENT)
    try:
        submitted = _wait_for(lambda: record.is_file() and _running_task(cluster, root), 400)
    finally:
        killed.process.kill()
        killed.finish()
    assert submitted, killed.stderr()[-3000:]
    job = json.loads(record.read_text())["job"]
    assert job in cluster.squeue().replace("_", " ").split(), cluster.squeue()
    return job


def _assert_graded_right(out: str, root: Path) -> None:
    rows = _rows(out)
    for student, score in RIGHT.items():
        assert f" {score} " in rows[student] and " graded " in rows[student], out
    summary = json.loads((root / "grading" / ASSIGNMENT / "summary.json").read_text())
    assert {o["student"]: o["status"] for o in summary} == {"alice": "graded", "bob": "graded"}


def test_a_rerun_after_a_sigkill_attaches_to_the_array_instead_of_submitting_another(
    setup,
) -> None:
    root, cluster = setup
    before = _arrays(root)
    job = _killed_after_submitting(root, cluster)
    # asked with another limit: the array grades with its own, and the rerun says so
    code, out, err = Grader(root, cluster, [*GRADE, "--wall", "150"]).finish()
    assert code == 0, out + err[-3000:]
    assert f"attaching to the Slurm array {job}" in err, err[-3000:]
    assert f"the array {job} grades with that run's limits" in err, err[-3000:]
    assert "--wall 120 there, 150 here" in err, err[-3000:]
    _assert_graded_right(out, root)
    assert _arrays(root) - before == {job}, "a second array was submitted"
    _assert_nothing_left(root, cluster)


def test_a_rerun_merges_an_array_that_ended_while_nobody_watched(setup) -> None:
    root, cluster = setup
    before = _arrays(root)
    job = _killed_after_submitting(root, cluster)
    assert _wait_for(lambda: not cluster.squeue().strip(), 400), cluster.squeue()
    code, out, err = Grader(root, cluster, GRADE).finish()
    assert code == 0, out + err[-3000:]
    assert f"merging the results of the Slurm array {job}" in err, err[-3000:]
    _assert_graded_right(out, root)
    assert _arrays(root) - before == {job}, "a second array was submitted"
    _assert_nothing_left(root, cluster)


def test_a_run_that_cannot_ask_the_queue_refuses_rather_than_submit_blindly(setup) -> None:
    """The controller does not answer (stopped here): an earlier array may be running in these
    folders, so no second one is submitted."""
    root, cluster = setup
    before = _arrays(root)
    cluster.slurmctld.send_signal(signal.SIGSTOP)
    try:
        code, out, err = Grader(root, cluster, GRADE).finish(300)
    finally:
        cluster.slurmctld.send_signal(signal.SIGCONT)
    refusal = [line for line in err.splitlines() if "cannot tell" in line]
    assert code == 1 and len(refusal) == 1, out + err[-3000:]
    assert "whether an earlier Slurm array of simt is still queued or running" in refusal[0]
    assert "Traceback" not in err, err[-3000:]
    assert _arrays(root) == before
    _assert_nothing_left(root, cluster)
