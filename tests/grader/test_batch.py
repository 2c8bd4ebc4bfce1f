"""``python -m grader autograde`` on a small class with honest and hostile students.

One run grades two assignments through one pool of workers: simt, where
everything below happens, and multigpu, with one correct student.

Real nbgrader, real sandbox (whatever this machine allows; the attacks that
would hit the test machine itself are skipped below the ``uid`` level). Each
hostile submission must leave the other students' scores, the gradebook and
the course files as they were.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    assert_all_succeeded,
    make_course,
    page_text,
    run_grader,
    run_nbgrader,
    scores,
)

from grader.run.settings import course_settings
from grader.sandbox import isolation as sandbox
from grader.sandbox import processes
from helpers import ROOT

pytestmark = pytest.mark.slow
#: What the integrity token looks like (grader/integration/preprocessors.py).
ASSIGNMENT = "simt"
#: Graded in the same run, through the same workers.
SECOND = "multigpu"
LEVEL = sandbox.detect_level()

ATTACKS = r"""
import os, signal, sqlite3, subprocess, sys
from pathlib import Path
import demos
here = Path.cwd()
# here.parents[2]: this student's course copy; COURSE: the real course
targets = [Path(demos.__file__), Path(demos.__file__).parents[1] / "nbgrader_config.py"]
for course in (here.parents[2], Path(COURSE)):
    targets += [course / "gradebook.db", course / "nbgrader_config.py",
                course / "submitted" / "alice" / "simt" / "simt.ipynb"]
for target in targets:
    try:
        with open(target, "a") as f:
            f.write("\n# owned\n")
        print("WROTE", target)
    except OSError as error:
        print("blocked", type(error).__name__)
for db in (here.parents[2] / "gradebook.db", Path(COURSE) / "gradebook.db"):
    try:
        rows = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute(
            "select source from source_cell").fetchall()
        print("LEAKED", rows)
    except Exception as error:
        print("blocked", type(error).__name__)
try:
    subprocess.Popen(["sleep", "300"], start_new_session=True)
except Exception as error:
    print("no process", type(error).__name__)
try:
    hog = bytearray(64 << 30)  # beyond the backstop: refused at once
    print("GOT MEMORY")
except MemoryError:
    print("memory limited")
# a HOME of this notebook's own, writable (CuPy keeps its compiled kernels there)
home = Path(os.environ["HOME"])
(home / ".cache-probe").write_text("x")
print("OWN HOME", home.name, oct(home.stat().st_mode & 0o777), home.stat().st_uid == os.getuid())
for pid in (os.getppid(), -1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""


def _hash_tree(*paths: Path) -> dict[str, str]:
    out = {}
    for top in paths:
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _solution(root: Path) -> nbformat.NotebookNode:
    return nbformat.read(root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def _hand_in(root: Path, student: str, nb: nbformat.NotebookNode | Path) -> None:
    target = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, Path):
        target.write_bytes(nb.read_bytes())
    else:
        nbformat.write(nb, target)


def _sandbox_processes(work: Path) -> list[int]:
    """Processes of a sandbox user started for this run (their environment names its folder).

    Other grading runs of the test suite may hold sandbox user ids at the same time.
    """
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and processes.BASE_UID <= entry.stat().st_uid < processes.BASE_UID + 64
                and str(work).encode() in (entry / "environ").read_bytes()
            ):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    if LEVEL == "limits":
        pytest.skip(
            "no sandbox here (needs root or user namespaces): the attacks would "
            "hit the test machine"
        )
    root = make_course(tmp_path_factory.mktemp("grader"))
    assert_all_succeeded(
        run_nbgrader(root, [["generate_assignment", ASSIGNMENT], ["generate_assignment", SECOND]])
    )
    _hand_in(root, "alice", root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    second = root / "submitted" / "alice" / SECOND / f"{SECOND}.ipynb"
    second.parent.mkdir(parents=True)
    second.write_bytes((root / "solutions" / SECOND / f"{SECOND}.ipynb").read_bytes())
    renamed = root / "submitted" / "bob" / ASSIGNMENT / "simt (1).ipynb"  # a browser's rename
    renamed.parent.mkdir(parents=True)
    renamed.write_bytes((root / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes())

    noisy = _solution(root)  # correct, but writes to stderr in a solution cell
    first = next(c for c in noisy.cells if c.metadata.get("nbgrader", {}).get("solution"))
    first.source += (
        "\nimport sys, warnings\nprint('debug', file=sys.stderr)\nwarnings.warn('a warning')"
    )
    # ... and has JupyterLab's "split cell": two cells with one grade id
    index, cell = next(
        (i, c) for i, c in enumerate(noisy.cells) if c.metadata.get("nbgrader", {}).get("solution")
    )
    noisy.cells.insert(
        index, nbformat.v4.new_code_cell("first_half = 1", metadata=dict(cell.metadata))
    )
    _hand_in(root, "carol", noisy)

    hostile = _solution(root)
    hostile.cells.insert(1, nbformat.v4.new_code_cell(ATTACKS.replace("COURSE", repr(str(root)))))
    _hand_in(root, "mallory", hostile)

    blanked = nbformat.read(root / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    blanked.cells.insert(
        1,
        nbformat.v4.new_code_cell("get_ipython().input_transformers_post.append(lambda lines: [])"),
    )
    _hand_in(root, "trudy", blanked)

    looping = _solution(root)
    # 8 s, then a loop that ignores the interrupt its cell limit (10 s at least) sends; nbclient
    # gives up 4 s later, past the 20 s wall limit: only the notebook's wall time stops it
    looping.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(8)"))
    looping.cells.insert(
        2,
        nbformat.v4.new_code_cell(
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
        ),
    )
    _hand_in(root, "lou", looping)

    greedy = _solution(root)  # writes 3 GB, over the 2G limit below
    greedy.cells.insert(1, nbformat.v4.new_code_cell('hog = b"x" * (3 << 30)'))
    _hand_in(root, "greta", greedy)

    watched = [
        root / "nbgrader_config.py",
        root / "solutions",
        root / "exercises",
        root / "submitted",
        ROOT / "demos",
        ROOT / "nbgrader_config.py",
    ]
    before = _hash_tree(*watched)
    git_status = [
        "git",
        "status",
        "--porcelain",
        "--",
        "demos",
        "nbgrader_config.py",
        "solutions",
        "exercises",
        "course",
        "pyproject.toml",
    ]
    git_before = subprocess.run(
        git_status, cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout
    # Without private mounts (level "uid") the sandbox user must pass through the
    # grading folder's parents; pytest's temporary folders are private.
    work = Path(tempfile.mkdtemp(prefix="grader-test-", dir="/var/tmp"))
    work.chmod(0o711)
    proc = run_grader(
        root,
        ["autograde", ASSIGNMENT, SECOND, "--workers", "2", "--wall", "20", "--memory", "2G"]
        + ["--work", str(work)],
        timeout=600,
    )
    try:
        assert (work / ASSIGNMENT / "summary.json").is_file(), proc.stdout + proc.stderr[-3000:]
        summary = json.loads((work / ASSIGNMENT / "summary.json").read_text())
        second_summary = json.loads((work / SECOND / "summary.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    feedback = run_nbgrader(root, [["generate_feedback", ASSIGNMENT]])
    return {
        "root": root,
        "proc": proc,
        "summary": {o["student"]: o for o in summary},
        "second_summary": {o["student"]: o for o in second_summary},
        "changed": {k for k, v in _hash_tree(*watched).items() if before.get(k) != v}
        | (set(before) - set(_hash_tree(*watched))),
        "git": (
            git_before,
            subprocess.run(
                git_status, cwd=ROOT, capture_output=True, text=True, check=False
            ).stdout,
        ),
        "leftover": _sandbox_processes(work),
        "feedback": feedback,
    }


def _score(graded, student: str) -> tuple[float, float]:
    return scores(graded["root"])[(ASSIGNMENT, student)]


def test_several_assignments_are_graded_in_one_run(graded) -> None:
    assert scores(graded["root"])[(SECOND, "alice")] == (10, 10), graded["proc"].stdout
    assert list(graded["second_summary"]) == ["alice"]
    assert graded["second_summary"]["alice"]["status"] == "graded"
    # a table per assignment, under its name
    assert f"\n{ASSIGNMENT}\nstudent" in graded["proc"].stdout
    assert f"\n{SECOND}\nstudent" in graded["proc"].stdout


def test_honest_students_get_what_they_earned(graded) -> None:
    assert _score(graded, "alice") == (10, 10), graded["proc"].stdout
    assert _score(graded, "bob") == (0, 10)
    assert graded["summary"]["alice"]["flags"] == []
    assert any("renamed notebook simt (1).ipynb" in f for f in graded["summary"]["bob"]["flags"])


def test_each_notebook_says_where_its_seconds_went(graded) -> None:
    """The execute preprocessor's phases (grader.integration.phase_timings), with the hidden
    tests' seconds (hidden_test_cells) and the kernel's CPU seconds where its cgroup counts."""
    phases = graded["summary"]["alice"]["phases"]
    wall = {"start", "cells_in_kernel", "hidden_tests", "other", "grader_cpu"}
    assert wall <= set(phases) <= wall | {"kernel_cpu"}, phases
    assert phases["start"] > 0 and phases["cells_in_kernel"] > 0 and phases["hidden_tests"] > 0


def _setup_output(graded, assignment: str, grade_id: str) -> str:
    """What the setup cell of alice's graded *assignment* printed."""
    nb = nbformat.read(
        graded["root"] / "autograded" / "alice" / assignment / f"{assignment}.ipynb", as_version=4
    )
    setup = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join(o.get("text", "") for o in setup.outputs)


@pytest.mark.gpu
def test_sandbox_passes_the_gpu_in_or_hides_it_as_the_course_says(graded) -> None:
    """On a GPU machine the sandbox passes the GPU in for an assignment graded with it (multigpu:
    its devices are real GPUs) and hides it for one in ``c.Grader.without_gpu`` (simt: its
    kernels' verdicts come from the grader's simulator, so its visible tests run there too)."""
    without_gpu = course_settings(graded["root"]).without_gpu
    assert SECOND not in without_gpu
    assert ASSIGNMENT in without_gpu
    devices = _setup_output(graded, SECOND, "multi-setup")
    assert "GpuDevice" in devices and "SimulatedDevice" not in devices, devices
    assert "CUDA simulator: True" in _setup_output(graded, ASSIGNMENT, "simt-setup")


def test_stderr_and_warnings_cost_nothing(graded) -> None:
    assert _score(graded, "carol") == (10, 10), graded["proc"].stdout
    page = graded["root"] / "autograded" / "carol" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert "[stderr, not counted as an error] debug" in page.read_text()


def test_an_input_transformer_changes_no_verdict_and_is_flagged(graded) -> None:
    """trudy hands in the blank release with every later cell blanked: the kernel runs no test,
    but the hidden tests run in the grader, and her unwritten answers score nothing."""
    assert _score(graded, "trudy") == (0, 10)
    flags = " ".join(graded["summary"]["trudy"]["flags"])
    assert "input transformers" in flags, flags


def test_duplicated_grade_id_is_repaired_and_flagged(graded) -> None:
    assert graded["summary"]["carol"]["status"] == "graded"
    assert any("duplicated grade ids" in f for f in graded["summary"]["carol"]["flags"])


def test_wall_time_limit_stops_a_looping_notebook(graded) -> None:
    lou = graded["summary"]["lou"]
    assert lou["status"] == "failed" and lou["seconds"] < 90, lou
    assert any("limit per notebook" in f for f in lou["flags"]), lou["flags"]
    # the regrade command names every student not graded
    assert re.search(rf"autograde {ASSIGNMENT} --student \S*\blou\b", graded["proc"].stdout), (
        graded["proc"].stdout
    )


def test_memory_limit_stops_a_notebook_that_writes_too_much(graded) -> None:
    greta = graded["summary"]["greta"]
    assert greta["status"] == "failed", greta
    assert any(f.startswith("memory: the notebook used") for f in greta["flags"]), greta
    assert not any(f.startswith("nbgrader:") for f in greta["flags"]), "the reason, not its echo"
    assert _score(graded, "alice") == (10, 10)  # the others are graded as usual


def test_attacks_change_nothing_outside_the_students_own_folder(graded) -> None:
    mallory = graded["summary"]["mallory"]
    assert mallory["status"] == "graded", mallory
    # the attacks failed, and their cell (os, subprocess...) is one the grader cannot follow:
    # the later hidden tests are left to a human (grader.verdicts.source_gate), not scored
    assert _score(graded, "mallory") == (0, 10)
    assert any("gradebook" in f for f in mallory["flags"])
    assert any("the grader cannot trust how your code" in f for f in mallory["flags"]), mallory
    assert not graded["changed"], sorted(graded["changed"])[:5]
    assert graded["git"][0] == graded["git"][1]
    nb = nbformat.read(
        graded["root"] / "autograded" / "mallory" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4
    )
    output = json.dumps(nb.cells[1].outputs)
    assert output.count("blocked") == 10, output
    assert "memory limited" in output
    assert "OWN HOME home 0o700 True" in output, output
    assert "WROTE" not in output and "LEAKED" not in output
    assert "GOT MEMORY" not in output


def test_no_process_survives_its_notebook(graded) -> None:
    assert graded["leftover"] == []
    assert graded["proc"].returncode == 1  # lou failed; the batch itself finished


def test_gradebook_has_every_graded_student_once(graded) -> None:
    found = {s for (a, s) in scores(graded["root"]) if a == ASSIGNMENT}
    assert found == {"alice", "bob", "carol", "mallory", "trudy"}
    assert os.stat(graded["root"] / "gradebook.db").st_mode & 0o077 == 0


def test_feedback_is_made_from_the_merged_grades(graded) -> None:
    assert_all_succeeded(graded["feedback"])
    for student in ("alice", "bob", "carol", "mallory", "trudy"):
        page = graded["root"] / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        assert "BEGIN HIDDEN TESTS" not in page.read_text(), student
    trudy = page_text(graded["root"] / "feedback" / "trudy" / ASSIGNMENT / f"{ASSIGNMENT}.html")
    # her hook (get_ipython) is refused by the source gate: the hidden tests say so, for a human
    assert "the grader cannot trust how your code got its answers" in trudy
    assert "flagged for manual grading" in trudy
