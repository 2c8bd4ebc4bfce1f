"""What a student's kernel leaves behind never reaches the grader's hands.

The grader runs as root and, after the notebook, writes the graded notebook,
copies folders and makes feedback. Each student here attacks that from inside
the sandbox, graded by real ``nbgrader autograde`` through ``python -m grader
autograde`` (and one through plain ``nbgrader autograde``, which must sandbox
its kernel too):

* symbolic links in the notebook's folder to the course's gradebook, config,
  solutions, another student's folder and ``/``, and the notebook itself
  replaced by a link to a root-owned file, made before the tests and after
  the last cell;
* a world-readable second copy of the course elsewhere on the machine;
* a hand-in that arrives with links (to the gradebook, to the root-owned
  file) and a file over the size limit in its folder (for plain nbgrader,
  which copies such a link's target as root, too);
* shared memory, files in ``/tmp`` and files in the notebook's folder beyond
  the limits, more processes than ``--processes`` and more CPU time than ``--cpu``;
* a kernel that ends itself (the summary says so in one line);
* a class whose graded folders are at their total (``--class-disk``).

Afterwards the course files, the other students' files and the root-owned
file are unchanged (hashes), no graded folder or feedback holds a link or
anything of the course, and every stop is flagged with its reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest
from hands_attacks import (
    BACKUP_READER,
    BURNS,
    EXITS,
    FOLDER_FILES,
    FORKS,
    LINK_READER,
    LINKS,
    SHARED_MEMORY,
    SPREAD,
    TMP_FILES,
)
from nbgrader_driver import (
    assert_all_succeeded,
    grade_earlier,
    gradebook_rows,
    make_course,
    run_grader,
    run_nbgrader,
    scores,
)

from grader.run.graded import cell_errors
from grader.sandbox import cgroups
from grader.sandbox import isolation as sandbox

pytestmark = pytest.mark.slow
ASSIGNMENT = "simt"
LEVEL = sandbox.detect_level()
HIDES = LEVEL.startswith("bwrap")  # only bubblewrap hides world-readable files


def _hash_tree(*paths: Path) -> dict[str, str]:
    out = {}
    for top in paths:
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and not path.is_symlink():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _with(root: Path, student: str, first: str | list[str] = "", last: str = "") -> None:
    """The solution, with *first* as new cells after the first and *last* as a new last cell."""
    nb = nbformat.read(root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for cell in reversed([first] if isinstance(first, str) else first):
        if cell:
            nb.cells.insert(1, nbformat.v4.new_code_cell(cell))
    if last:
        nb.cells.append(nbformat.v4.new_code_cell(last))
    target = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    if LEVEL == "limits" or os.geteuid() != 0:
        pytest.skip("needs root and a sandbox with a user id of its own: the attacks are real")
    root = make_course(tmp_path_factory.mktemp("hands"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))
    grade_earlier(root, ASSIGNMENT, "zoe")  # graded and reviewed before: rows to keep
    outside = Path(tempfile.mkdtemp(prefix="grader-hands-", dir="/var/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(outside, ignore_errors=True))
    victim = outside / "root-owned.txt"
    victim.write_text("only root writes this\n")
    # a world-readable second copy of the course, where a backup would be
    backup = Path(tempfile.mkdtemp(prefix="gpu-course-backup-", dir="/srv"))
    request.addfinalizer(lambda: shutil.rmtree(backup, ignore_errors=True))
    backup.chmod(0o755)
    (backup / "simt.ipynb").write_text("HIDDEN TESTS OF THE BACKUP\n")
    (backup / "simt.ipynb").chmod(0o644)
    values = {"COURSE": repr(str(root)), "VICTIM": repr(str(victim))}
    links = LINKS
    for name, value in values.items():
        links = links.replace(name, value)
    _with(root, "alice", last="x = 1")
    _with(root, "links-first", first=links)
    _with(root, "links-last", last=links)
    _with(root, "backup", first=BACKUP_READER.replace("BACKUP", repr(str(backup / "simt.ipynb"))))
    _with(root, "shm", first=SHARED_MEMORY)
    _with(root, "tmpfiles", first=TMP_FILES)
    _with(root, "bigfiles", first=FOLDER_FILES)
    _with(root, "exits", first=EXITS)
    _with(root, "spread", first=SPREAD)
    _with(root, "forks", first=FORKS)
    _with(root, "burns", first=BURNS)
    # a hand-in that arrives with links and a huge file in it (an exchange, a manual copy)
    _with(root, "handed-links")
    handed = root / "submitted" / "handed-links" / ASSIGNMENT
    os.symlink(root / "gradebook.db", handed / "gradebook.db")
    os.symlink(victim, handed / "secret.txt")
    (handed / "data.bin").write_bytes(b"x" * (70 << 20))
    _with(
        root,
        "plain",
        first=links,
        last=BACKUP_READER.replace("BACKUP", repr(str(backup / "simt.ipynb"))) + LINK_READER,
    )
    # plain nbgrader copies a hand-in's other files following links, as root
    os.symlink(victim, root / "submitted" / "plain" / ASSIGNMENT / "handed-link.txt")
    watched = [root / "nbgrader_config.py", root / "solutions", root / "exercises", victim]
    watched += [root / "submitted"]
    before = _hash_tree(*watched)
    students = "alice,links-first,links-last,backup,shm,tmpfiles,bigfiles,exits,spread"
    students += ",handed-links,forks,burns"
    graded_here = [*students.split(","), "plain"]
    rows_before = gradebook_rows(root, leaving_out=graded_here)
    work = Path(tempfile.mkdtemp(prefix="grader-hands-work-", dir="/var/tmp"))
    work.chmod(0o711)
    command = ["autograde", ASSIGNMENT, "multigpu", "--student", students, "--workers", "2"]
    command += ["--memory", "1G", "--disk", "1536M", "--processes", "64", "--cpu", "10"]
    command += ["--work", str(work)]
    proc = run_grader(root, command)
    try:
        summary = json.loads((work / ASSIGNMENT / "summary.json").read_text())
        leftovers = sorted(str(p) for p in work.rglob("*") if "runtime" in p.parts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # plain nbgrader, in the course folder itself, sandboxed all the same
    plain = run_nbgrader(root, [["autograde", ASSIGNMENT, "plain"]])
    feedback = run_nbgrader(root, [["generate_feedback", ASSIGNMENT]])
    after = _hash_tree(*watched)
    rows_after = gradebook_rows(root, leaving_out=graded_here)
    class_full = _grade_again_in_a_full_class(root, "alice")
    return {
        "root": root,
        "proc": proc,
        "summary": {o["student"]: o for o in summary},
        "changed": sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)),
        "rows": (rows_before, rows_after),
        "leftovers": leftovers,
        "plain": plain,
        "feedback": feedback,
        "class_full": class_full,
    }


def _grade_again_in_a_full_class(root: Path, student: str) -> dict:
    """*student* graded again with ``--class-disk 1K``, which the others' graded folders fill."""
    work = Path(tempfile.mkdtemp(prefix="grader-hands-full-", dir="/var/tmp"))
    work.chmod(0o711)
    command = ["autograde", ASSIGNMENT, "--student", student, "--class-disk", "1K"]
    proc = run_grader(root, [*command, "--work", str(work)])
    try:
        return json.loads((work / "summary.json").read_text())[0]
    except OSError:
        pytest.fail(f"no summary: {proc.stdout}\n{proc.stderr[-3000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _output(graded, student: str) -> str:
    path = graded["root"] / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return json.dumps([c.get("outputs", []) for c in nb.cells])


def _graded_for_a_human(graded, student: str) -> None:
    """Graded to the end, every part refused by the source gate (``os`` or ``subprocess`` before
    the tests: such a kernel could forge its reports), so a human grades it."""
    errors = cell_errors(graded["root"], ASSIGNMENT, student)
    assert scores(graded["root"])[(ASSIGNMENT, student)] == (0, 10), (student, errors)
    assert len(errors) == 3 and all("cannot trust how your code" in e for e in errors.values())


def test_links_left_by_the_kernel_are_never_followed(graded) -> None:
    for student in ("links-first", "links-last", "plain"):
        score = scores(graded["root"])[(ASSIGNMENT, student)]
        if student == "links-last":  # after the tests: graded as the solution
            assert score == (10, 10), (student, graded["proc"].stdout, graded["plain"])
        else:
            _graded_for_a_human(graded, student)
    assert "notebook replaced by a link" in _output(graded, "links-first")
    # the root-owned file, the course and the other students' files are as they were
    assert graded["changed"] == []
    for folder in ("autograded", "feedback"):
        for student in ("links-first", "links-last", "plain"):
            tree = graded["root"] / folder / student / ASSIGNMENT
            found = sorted(p.name for p in tree.rglob("*"))
            assert not [p for p in tree.rglob("*") if p.is_symlink()], found
            assert found == [f"{ASSIGNMENT}.{'html' if folder == 'feedback' else 'ipynb'}"], found


def test_the_course_and_other_students_rows_of_the_gradebook_are_unchanged(graded) -> None:
    """zoe's grades, comments and scores, and the course's cells and hidden tests."""
    before, after = graded["rows"]
    assert len(before["grade"]) > 0 and len(before["comment"]) > 0 and before["source_cell"]
    changed = [table for table in before if before[table] != after.get(table)]
    assert changed == [], {t: (before[t], after.get(t)) for t in changed}
    # nothing of theirs in anyone's feedback
    pages = sorted((graded["root"] / "feedback").rglob("*.html"))
    assert pages and not [p for p in pages if "zoe: reviewed" in p.read_text()]


def test_a_link_in_a_hand_in_is_not_followed_by_plain_nbgrader_either(graded) -> None:
    """nbgrader copies it as root: the copy is taken away before the kernel starts."""
    text = _output(graded, "plain")
    assert "only root writes this" not in text and "no link FileNotFoundError" in text, text


def test_links_and_huge_files_in_a_hand_in_are_left_out_and_flagged(graded) -> None:
    assert scores(graded["root"])[(ASSIGNMENT, "handed-links")] == (10, 10)
    flags = graded["summary"]["handed-links"]["flags"]
    assert flags == [
        "submission file data.bin: 70 MB, over the size limit",
        "submission file gradebook.db: a symbolic link, not copied",
        "submission file secret.txt: a symbolic link, not copied",
    ], flags
    tree = graded["root"] / "autograded" / "handed-links" / ASSIGNMENT
    assert sorted(p.name for p in tree.rglob("*")) == [f"{ASSIGNMENT}.ipynb"]


def test_a_class_at_its_disk_total_keeps_its_scores_and_flags_what_was_not_copied(
    graded,
) -> None:
    alice = graded["class_full"]
    assert (alice["status"], alice["score"]) == ("graded", 10), alice
    flag = "graded folder: simt.ipynb: "
    assert [f for f in alice["flags"] if f.startswith(flag)], alice
    assert all("past the class's 1 KB in autograded/ (--class-disk)" in f for f in alice["flags"])
    assert not (graded["root"] / "autograded" / "alice" / ASSIGNMENT / "simt.ipynb").exists()


def test_nothing_the_kernel_wrote_is_kept(graded) -> None:
    assert graded["leftovers"] == []


def test_plain_nbgraders_box_is_removed_with_its_user_id_released() -> None:
    import contextlib

    from grader.sandbox import box as boxes

    with contextlib.ExitStack() as stack:
        _, folder = boxes.plain_setting(stack)
        assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    assert not folder.exists()


@pytest.mark.skipif(not HIDES, reason=f"sandbox level {LEVEL} cannot hide world-readable files")
def test_a_second_copy_of_the_course_is_not_visible(graded) -> None:
    for student in ("backup", "plain"):
        text = _output(graded, student)
        assert "no backup FileNotFoundError" in text, text[:2000]
        assert "HIDDEN TESTS OF THE BACKUP" not in text


def test_shared_memory_counts_against_the_memory_limit(graded) -> None:
    shm = graded["summary"]["shm"]
    assert shm["status"] == "failed", shm
    assert any(f.startswith("memory:") for f in shm["flags"]), shm


@pytest.mark.skipif(
    not HIDES or not cgroups.available(),
    reason="needs a memory cgroup, and bubblewrap for a /tmp in memory",
)
def test_files_in_memory_count_against_the_memory_limit(graded) -> None:
    tmp = graded["summary"]["tmpfiles"]
    assert tmp["status"] == "failed", tmp
    assert any("files in memory" in f for f in tmp["flags"]), tmp


def test_files_in_the_notebooks_folder_are_limited(graded) -> None:
    big = graded["summary"]["bigfiles"]
    assert big["status"] == "failed", big
    assert any(f.startswith("disk: the notebook used") for f in big["flags"]), big


def test_files_in_the_sandboxes_own_memory_file_systems_are_limited(graded) -> None:
    """Unmapped files in /tmp and /dev/shm count as files, with or without a memory cgroup."""
    spread = graded["summary"]["spread"]
    assert spread["status"] == "failed", spread
    assert any(f.startswith(("disk:", "memory:")) for f in spread["flags"]), spread


def test_processes_past_the_limit_are_refused_and_the_notebook_is_graded(graded) -> None:
    text = _output(graded, "forks")
    stopped = re.search(r"STOPPED AT (\d+) BlockingIOError", text)
    assert stopped and int(stopped.group(1)) < 64, text[:2000]
    _graded_for_a_human(graded, "forks")


def test_cpu_time_past_the_limit_stops_the_kernel(graded) -> None:
    # stopped by its cells' time limits instead, it would have been graded (10/10)
    burns = graded["summary"]["burns"]
    assert burns["status"] == "failed", burns
    # killed by the CPU limit while a cell ran; on a loaded machine nbclient may first
    # report the cell that was running out of its time
    reason = " ".join(burns["flags"])
    assert (
        "the kernel died while a cell ran" in reason or "a cell ran past its time limit" in reason
    ), burns


def test_a_kernel_that_ends_itself_is_reported_in_one_line(graded) -> None:
    exits = graded["summary"]["exits"]
    assert exits["status"] == "failed"
    assert "the kernel died while a cell ran" in " ".join(exits["flags"]), exits
    assert not any("Please see the" in f for f in exits["flags"])


def test_honest_work_is_graded_as_before(graded) -> None:
    assert scores(graded["root"])[(ASSIGNMENT, "alice")] == (10, 10)
    assert graded["summary"]["alice"]["flags"] == []
    assert_all_succeeded(graded["feedback"])


def test_a_student_without_a_submission_is_not_a_failure(graded) -> None:
    # multigpu was named in the same run for the same students; none handed it in
    assert graded["proc"].stdout.count("no submission") == 12, graded["proc"].stdout
    assert "grade them again" in graded["proc"].stdout  # for the simt failures only
    assert "autograde multigpu --student" not in graded["proc"].stdout
