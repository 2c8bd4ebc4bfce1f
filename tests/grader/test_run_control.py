"""``python -m grader autograde`` as one run among others: real nbgrader, real sandbox.

One class of simt (the quickest assignment): zoe hands in the solution, ken
the solution with a ``diffuse`` whose kernel is killed when a hidden test
calls it (as an outside kill would). The run must fail ken's notebook (the
grader's failure, not his) and list him in the command that grades again; a
second run started meanwhile is refused in one line naming the first; the
grade record says which submission each grade is for, and ``status`` finds
a late upload; a Ctrl-C ends the run with the table, the command and exit
status 130, and no process of the run outlives it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    assert_all_succeeded,
    hand_in,
    make_course,
    nbgrader_env,
    run_grader,
    run_nbgrader,
    simt_solution_losing_two_points,
)
from run_leftovers import run_processes

from grader.sandbox import isolation as sandbox
from grader.sandbox import processes

pytestmark = pytest.mark.slow
ASSIGNMENT = "simt"

#: In diffuse: the visible test calls it on 50 points; any other size is a hidden input,
#: where it leaves a mark in its folder and waits (to be killed from outside, by the test).
WAITS_ON_HIDDEN_INPUT = (
    "    if u.shape[0] != 50:\n"
    "        import time\n"
    "        with open(MARK, 'w') as mark:\n"
    "            mark.write('hidden input')\n"
    "        time.sleep(120)\n"
)
MARK = "hidden-input-reached"


def _solution(root: Path) -> nbformat.NotebookNode:
    return nbformat.read(root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def _hand_in(root: Path, student: str, nb: nbformat.NotebookNode) -> None:
    target = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


def _grader(root: Path, args: list[str], output: int = subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "grader", "--course", str(root), *args],
        cwd=root,
        env=nbgrader_env(),
        stdout=output,
        stderr=output,
        text=True,
    )


def _kill_kernel_in_hidden_test(folder: Path) -> None:
    """SIGKILL the kernel of the notebook graded in *folder* once it waits in a hidden test."""
    if not _wait_for(lambda: any(folder.rglob(MARK)), 300):
        return
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and processes.BASE_UID <= entry.stat().st_uid < processes.BASE_UID + 64
                and str(folder).encode() in (entry / "environ").read_bytes()
            ):
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:
            pass


def _wait_for(condition, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory):
    if sandbox.detect_level() == "limits":
        pytest.skip("no sandbox here (needs root or user namespaces)")
    root = make_course(tmp_path_factory.mktemp("control"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))
    _hand_in(root, "zoe", _solution(root))
    killed = _solution(root)
    launch = next(
        c for c in killed.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "simt-launch"
    )
    head, body = launch.source.split("### BEGIN SOLUTION\n")
    waiting = WAITS_ON_HIDDEN_INPUT.replace("MARK", repr(MARK))
    launch.source = head + "### BEGIN SOLUTION\n" + waiting + body
    _hand_in(root, "ken", killed)
    work = Path(tempfile.mkdtemp(prefix="grader-control-", dir="/var/tmp"))
    work.chmod(0o711)
    first = _grader(root, ["autograde", ASSIGNMENT, "--work", str(work), "--workers", "1"])
    killer = threading.Thread(target=_kill_kernel_in_hidden_test, args=(work / "ken",))
    killer.start()
    lock = root / "grading" / f"{ASSIGNMENT}.lock"
    assert _wait_for(lambda: lock.is_file() and str(first.pid) in lock.read_text(), 60)
    second = run_grader(root, ["autograde", ASSIGNMENT, "--work", str(work)], timeout=120)
    out, err = first.communicate(timeout=600)
    killer.join()
    yield {"root": root, "work": work, "first": (first.returncode, out, err), "second": second}
    shutil.rmtree(work, ignore_errors=True)


def test_a_kernel_killed_in_a_hidden_test_fails_the_notebook_not_the_student(course) -> None:
    code, out, err = course["first"]
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("zoe", "ken"))}
    assert code == 1, out + err[-3000:]
    assert "10/10" in rows["zoe"] and " graded " in rows["zoe"], out
    assert " failed " in rows["ken"] and "grading machinery failed" in rows["ken"], out
    assert "fails for a hidden input" not in out
    assert f"autograde {ASSIGNMENT} --student ken" in out


def test_a_second_run_of_the_assignment_is_refused_in_one_line(course) -> None:
    second = course["second"]
    assert second.returncode == 1
    assert "being graded by another run (pid" in second.stderr, second.stderr[-2000:]
    assert "Traceback" not in second.stderr


def test_status_lists_failed_grades_and_late_uploads(course) -> None:
    root = course["root"]
    proc = run_grader(root, ["status", ASSIGNMENT], timeout=120)
    assert proc.returncode == 1 and "ken: failed" in proc.stdout and "zoe" not in proc.stdout
    late = _solution(root)
    late.cells.append(nbformat.v4.new_markdown_cell("uploaded late"))
    _hand_in(root, "zoe", late)
    proc = run_grader(root, ["status", ASSIGNMENT], timeout=120)
    assert "zoe: stale" in proc.stdout and "--only-stale" in proc.stdout, proc.stdout


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_ends_the_run_with_the_table_and_the_command_and_leaves_nothing(
    course, sent: signal.Signals, status: int
) -> None:
    root, work = course["root"], course["work"]
    logs = [work / s / "autograde.log" for s in ("zoe", "ken")]
    for log in logs:
        log.unlink(missing_ok=True)
    run = _grader(root, ["autograde", ASSIGNMENT, "--work", str(work)])
    try:
        started = _wait_for(
            lambda: run.poll() is not None or any(log.is_file() for log in logs), 300
        )
        time.sleep(1)  # a notebook in flight
        run.send_signal(sent)
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert started, err[-3000:]
    assert run.returncode == status, out + err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert "grade them again with" in out and "student" in out.splitlines()[0], out
    assert _wait_for(lambda: not run_processes(root, work), 10), run_processes(root, work)


def test_nothing_of_a_killed_run_outlives_it(course) -> None:
    root, work = course["root"], course["work"]
    for mark in (work / "ken").rglob(MARK):
        mark.unlink()
    run = _grader(root, ["autograde", ASSIGNMENT, "--work", str(work)], output=subprocess.DEVNULL)
    try:  # ken's notebook waits in a hidden test: its grading and kernel are in flight
        in_flight = _wait_for(lambda: any((work / "ken").rglob(MARK)), 300)
    finally:
        run.kill()  # SIGKILL: no handler, no clean-up of its own
        run.wait()
    left = [] if _wait_for(lambda: not run_processes(root, work), 15) else run_processes(root, work)
    for line in left:  # ours: not to be left to the next test
        os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert in_flight and not left, left


def test_a_class_is_refused_when_the_solution_fails_where_students_are_graded(course) -> None:
    root, work = course["root"], course["work"]
    with simt_solution_losing_two_points(root):
        proc = run_grader(root, ["autograde", ASSIGNMENT, "--work", str(work), "--student", "zoe"])
    refusal = [line for line in proc.stderr.splitlines() if "not graded:" in line]
    assert proc.returncode == 1 and len(refusal) == 1, proc.stdout + proc.stderr[-3000:]
    assert "the solution scores 8/10 in the grading sandbox" in refusal[0], refusal
    assert "simt-test-reader-blocks" in refusal[0], refusal
    zoe = next(line for line in proc.stdout.splitlines() if line.startswith("zoe"))
    assert " failed " in zoe and "-" in zoe.split()[1], proc.stdout
    assert f"autograde {ASSIGNMENT} --student zoe" in proc.stdout


def test_a_function_that_never_returns_costs_its_cells_limit_not_a_minute_a_call(
    tmp_path: Path,
) -> None:
    """reader_blocks answers the visible tests and loops forever on one hidden input: that
    cell's hidden test fails after the cell's limit (measured on the solution, 10 s at least),
    the rest of the notebook is graded as usual."""
    root = make_course(tmp_path)
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", "simt"]]))
    solution = nbformat.read(root / "solutions" / "simt" / "simt.ipynb", as_version=4)
    answer = next(c for c in solution.cells if c.source.startswith("def reader_blocks"))
    answer.source = answer.source.replace(
        '    """The blocks whose threads read u[element] in one step (sorted, no repeats)."""\n',
        '    """The blocks whose threads read u[element] in one step (sorted, no repeats)."""\n'
        "    if (element, n) == (32, 33):  # a hidden input\n"
        "        while True:\n"
        "            pass\n",
    )
    hand_in(root, "sleepy", "simt", nbformat.writes(solution))
    proc = run_grader(root, ["autograde", "simt", "--wall", "300"])
    summary = {
        o["student"]: o
        for o in json.loads((root / "grading" / "simt" / "summary.json").read_text())
    }
    sleepy = summary["sleepy"]
    assert sleepy["status"] == "graded", proc.stdout + proc.stderr[-2000:]
    assert 0 < sleepy["score"] < sleepy["max_score"], sleepy  # only reader_blocks' points lost
    assert sleepy["seconds"] < 55, sleepy  # nbclient alone waited 60 s for the one call
