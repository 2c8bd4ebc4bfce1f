"""Fast tests of the grading tools: the pre-grading check, intake, preprocessors, sandbox set-up."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader import collect as collect_mod
from grader import processes, sandbox
from grader.batch import Batch, course_setting
from grader.check import scan_code
from grader.collect import collect_all, safe_id, student_and_file
from grader.preprocessors import STDERR_LABEL, stderr_to_stdout
from helpers import ROOT


@pytest.mark.parametrize(
    "code, reason",
    [
        ("get_ipython().input_transformers_post.append(lambda lines: [])", "input transformers"),
        ("ip = globals()['get_' + 'ipython']()", "get_ipython"),
        (
            "exec(__import__('base64').b64decode("
            f"'{base64.b64encode(b'import nbgrader').decode()}'))",
            "nbgrader",
        ),
        ("import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None", "np.testing"),
        ("import numpy\nnumpy.testing.assert_array_equal = print", "numpy.testing"),
        ("import sys\nsys.modules['numpy'] = None", "sys.modules"),
        ("open('../../../solutions/simt/simt.ipynb').read()", "outside the submission"),
        (
            "from pathlib import Path\nimport demos\nPath(demos.__file__).parents[1] / 'solutions'",
            "solutions",
        ),
        ("import os\nos.kill(os.getppid(), 9)", "signals"),
        ("import subprocess\nsubprocess.Popen(['sleep', '9'])", "subprocess"),
        ("from demos.simt import blocks_for", "demos.simt"),
        ("from demos import distance\nd = distance.generic.distance_matrix", "demos.distance"),
        ("import demos.demo_numba_gpu as g", "demos.demo_numba_gpu"),
        ("from demos.cnn.model import build_model", "demos.cnn"),
        ("import importlib\nm = importlib.import_module('demos.' + 'simt')", "importlib"),
    ],
)
def test_check_flags_code_that_reaches_into_grading(code: str, reason: str) -> None:
    reasons = scan_code(code)
    assert reasons, code
    assert any(reason.split(".")[0].lower() in r.lower() or reason in r for r in reasons), reasons


def test_check_accepts_honest_code() -> None:
    code = (
        "import numpy as np\nfrom numba import cuda\nfrom demos import grading\n"
        "from demos.grading import array_module\nxp = grading.array_module()\n"
        "def add(a, b):\n    return a + b\n"
    )
    assert scan_code(code) == []


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_no_false_alarms_on_the_course_notebooks(folder: str) -> None:
    """The instructor's solutions and the blank exercises pass the code scan."""
    for path in sorted((ROOT / folder).glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("solution"):
                assert scan_code(cell.source) == [], (path.name, cell.source[:200])


def test_stderr_becomes_labelled_stdout_and_errors_stay() -> None:
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="Warning: slow\n"),
        nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[]),
    ]
    stderr_to_stdout(cell)
    assert cell.outputs[0]["name"] == "stdout"
    assert cell.outputs[0]["text"] == STDERR_LABEL + "Warning: slow\n"
    assert cell.outputs[1]["output_type"] == "error"


def test_safe_ids() -> None:
    assert safe_id("jürgen") == "jurgen"
    assert safe_id("anna maria") == "anna-maria"
    assert safe_id("O'Brien, Seán") == "o-brien-sean"
    assert safe_id("../..") == "student"


def test_download_names() -> None:
    P = Path
    assert student_and_file(P("smithjohn_12345_67890_simt.ipynb")) == ("smithjohn", "simt.ipynb")
    assert student_and_file(P("smithjohn_LATE_12345_67890_simt-1.ipynb")) == (
        "smithjohn",
        "simt.ipynb",
    )
    assert student_and_file(P("John Smith_12345_assignsubmission_file_/simt.ipynb")) == (
        "John Smith",
        "simt.ipynb",
    )
    assert student_and_file(P("alice/simt.ipynb")) == ("alice", "simt.ipynb")
    assert student_and_file(P("alice_simt.ipynb")) == ("alice", "simt.ipynb")


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return path


def test_collect_files_every_safe_input_and_refuses_the_rest(tmp_path: Path) -> None:
    course = tmp_path / "course"
    course.mkdir()
    inbox = tmp_path / "inbox"
    notebook = nbformat.writes(nbformat.v4.new_notebook()).encode()
    (inbox / "John Smith_12345_assignsubmission_file_").mkdir(parents=True)
    (inbox / "John Smith_12345_assignsubmission_file_" / "simt.ipynb").write_bytes(notebook)
    (inbox / "jürgen_1_2_simt.ipynb").write_bytes(notebook)
    (inbox / "anna maria").mkdir()
    (inbox / "anna maria" / "simt.ipynb").write_bytes(notebook)
    (inbox / "broken_3_4_simt.ipynb").write_bytes(b"{not json")
    (inbox / "old.tar.gz").write_bytes(b"\x1f\x8b")
    _zip(inbox / "evil.zip", {"../escape_simt.ipynb": notebook})
    _zip(inbox / "abs.zip", {"/tmp/abs_simt.ipynb": notebook})
    _zip(inbox / "link.zip", {}, link="linky_simt.ipynb")
    # links in a downloads folder: to a notebook, and to a folder of them, elsewhere
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "eve_7_8_simt.ipynb").write_bytes(notebook)
    (inbox / "sneaky_5_6_simt.ipynb").symlink_to(tmp_path / "elsewhere" / "eve_7_8_simt.ipynb")
    (inbox / "linked-folder").symlink_to(tmp_path / "elsewhere")
    good_zip = _zip(tmp_path / "class.zip", {"bob_simt.ipynb": notebook})
    report = collect_all(course, "simt", [inbox, good_zip, tmp_path / "missing.zip"])
    filed = {p.parent.parent.name for p in (course / "submitted").glob("*/simt/*.ipynb")}
    assert filed == {"john-smith", "jurgen", "anna-maria", "bob"}
    assert report.renamed == {
        "John Smith": "john-smith",
        "jürgen": "jurgen",
        "anna maria": "anna-maria",
    }
    refused = "\n".join(report.refused)
    for word in ("evil.zip", "abs.zip", "link.zip", "old.tar.gz", "broken", "missing.zip") + (
        "sneaky_5_6_simt.ipynb: a symbolic link",
        "linked-folder: a symbolic link",
    ):
        assert word in refused, refused
    assert not (tmp_path / "escape_simt.ipynb").exists()
    assert not list(course.glob("submitted/*/*/..*"))
    assert "jürgen,jurgen" in (course / "submitted" / "student-ids.csv").read_text()
    assert "refused" in report.text() and "'anna-maria'" in report.text()


def _nb(code: str = "x = 1") -> bytes:
    return nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    ).encode()


def _encrypt_flag(path: Path, member: str) -> Path:
    """Set the 'encrypted' flag (bit 0x1) of *member* in its local and central headers."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for signature, flags_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = data.find(signature)
        while data[start + name_at : start + name_at + len(name)] != name:
            start = data.find(signature, start + 1)
        data[start + flags_at] |= 0x1
    path.write_bytes(bytes(data))
    return path


def test_collect_reports_every_file_it_does_not_file_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = tmp_path / "course"
    members = {
        "alice_simt.ipynb": _nb("secret = 1"),
        "carol_simt.ipynb": _nb(),
        "dave_simt.ipynb": _nb("dave = 1"),
        "erin_helper.py": b"print(1)",
        ".DS_Store": b"\0",
        "__MACOSX/._carol_simt.ipynb": b"\0",
    }
    locked = _encrypt_flag(_zip(tmp_path / "locked.zip", members), "alice_simt.ipynb")
    locked.write_bytes(locked.read_bytes().replace(b"dave = 1", b"dave = 2"))  # bad CRC-32
    inbox = tmp_path / "inbox"
    (inbox / "frank").mkdir(parents=True)
    (inbox / "frank" / "simt.ipynb.txt").write_bytes(_nb())
    (inbox / "frank" / "simt.py").write_text("x = 1")
    (inbox / "frank" / "report.pdf").write_bytes(b"%PDF")
    (inbox / "frank" / ".DS_Store").write_bytes(b"\0")
    (inbox / "aaron_simt.ipynb").write_bytes(_nb("boom = 1"))  # before frank/
    later = _zip(tmp_path / "later.zip", {"bob_simt.ipynb": _nb()})
    real_is_notebook = collect_mod._is_notebook

    def failing(content: bytes) -> bool:
        if b"boom" in content:
            raise OSError("disk on fire")
        return real_is_notebook(content)

    monkeypatch.setattr(collect_mod, "_is_notebook", failing)
    report = collect_all(course, "simt", [locked, inbox, later])
    filed = {p.parent.parent.name for p in (course / "submitted").glob("*/simt/simt.ipynb")}
    assert filed == {"carol", "frank", "bob"}, report.text()
    lines = {line.split(": ", 1)[0]: line for line in report.refused}
    assert "encrypted" in lines[f"alice_simt.ipynb in {locked}"]
    assert "corrupt member" in lines[f"dave_simt.ipynb in {locked}"]
    assert "a Python script, not a notebook" in lines[f"erin_helper.py in {locked}"]
    assert "a Python script, not a notebook" in lines[str(inbox / "frank" / "simt.py")]
    assert "not a notebook (.pdf file)" in lines[str(inbox / "frank" / "report.pdf")]
    assert "disk on fire" in lines[str(inbox / "aaron_simt.ipynb")]
    assert len(report.refused) == 6, report.text()  # no line for the macOS noise
    assert report.notes == [
        f"{inbox / 'frank' / 'simt.ipynb.txt'}: a notebook uploaded as .txt, filed as simt.ipynb"
    ]
    assert "bob,bob" in (course / "submitted" / "student-ids.csv").read_text()

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(collect_mod, "_winner", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collect_all(course, "simt", [_zip(tmp_path / "new.zip", {"hal_simt.ipynb": _nb()})])
    assert "hal,hal" in (course / "submitted" / "student-ids.csv").read_text()


@pytest.mark.parametrize("keep, smith", [("latest", "late = 1"), ("on-time", "on_time = 1")])
def test_collect_keeps_one_of_two_notebooks_by_the_stated_rule(
    tmp_path: Path, keep: str, smith: str
) -> None:
    course = tmp_path / "course"
    downloads = _zip(
        tmp_path / "canvas.zip",
        {
            "smithjohn_LATE_12345_67890_simt.ipynb": _nb("late = 1"),
            "smithjohn_12345_67890_simt.ipynb": _nb("on_time = 1"),
            "amy_LATE_1_2_simt-2.ipynb": _nb("second = 1"),
            "amy_LATE_1_2_simt-1.ipynb": _nb("first = 1"),
        },
    )
    (tmp_path / "a" / "zoe").mkdir(parents=True)
    (tmp_path / "a" / "zoe" / "simt.ipynb").write_bytes(_nb("earlier = 1"))
    (tmp_path / "b" / "zoe").mkdir(parents=True)
    (tmp_path / "b" / "zoe" / "simt.ipynb").write_bytes(_nb("later = 1"))
    report = collect_all(course, "simt", [downloads, tmp_path / "a", tmp_path / "b"], keep=keep)

    def filed(student: str) -> str:
        return (course / "submitted" / student / "simt" / "simt.ipynb").read_text()

    assert smith in filed("smithjohn")
    assert "second = 1" in filed("amy")  # the higher resubmission number, under both rules
    assert "later = 1" in filed("zoe")  # otherwise the later input
    assert len(report.duplicates) == 3 and not report.refused, report.text()
    assert all(f"--keep {keep}:" in line for line in report.duplicates)
    smith_line = next(line for line in report.duplicates if line.startswith("smithjohn/"))
    kept = "smithjohn_LATE_" if keep == "latest" else "smithjohn_1"
    assert smith_line.startswith(f"smithjohn/simt.ipynb: kept {kept}"), smith_line
    assert "not filed: smithjohn_" in smith_line


def test_collect_replaces_an_earlier_runs_notebook_only_as_the_rule_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from grader.__main__ import main

    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("")
    on_time = _zip(tmp_path / "on-time.zip", {"smith_1_2_simt.ipynb": _nb("on_time = 1")})
    late = _zip(tmp_path / "late.zip", {"smith_LATE_1_2_simt.ipynb": _nb("late = 1")})
    target = course / "submitted" / "smith" / "simt" / "simt.ipynb"
    assert not collect_all(course, "simt", [on_time]).duplicates

    assert main(["--course", str(course), "collect", "simt", str(late), "--keep", "on-time"]) == 0
    out = capsys.readouterr().out
    assert "kept the submission filed before (from smith_1_2_simt.ipynb in" in out, out
    assert "--keep on-time:" in out and "on_time = 1" in target.read_text()

    assert main(["--course", str(course), "collect", "simt", str(late)]) == 0
    out = capsys.readouterr().out
    assert "smith_LATE_1_2_simt.ipynb in" in out and "replaced the submission filed before" in out
    assert "--keep latest:" in out and "late = 1" in target.read_text()

    # The LATE file is recorded as LATE: under on-time, the on-time one replaces it again;
    # the same file once more is no duplicate.
    report = collect_all(course, "simt", [on_time], keep="on-time")
    assert "replaced the submission filed before" in report.duplicates[0]
    assert "on_time = 1" in target.read_text()
    assert not collect_all(course, "simt", [on_time]).duplicates


def test_sandbox_command_shows_only_what_is_put_back_and_drops_the_user(tmp_path: Path) -> None:
    policy = sandbox.Policy(
        level="bwrap+uid",
        uid=61003,
        readonly=[str(ROOT / "demos")],
        writable=[str(tmp_path / "rt")],
        workdir=str(tmp_path / "rt" / "work"),
    )
    notebook = str(tmp_path / "autograded" / "alice" / "simt")
    command = sandbox.kernel_command(policy, str(tmp_path / "rt" / "k.json"), notebook)
    text = " ".join(command)
    for option in (
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "--tmpfs /tmp",
        "--ro-bind /usr /usr",
        f"--ro-bind {ROOT / 'demos'}",
        f"--bind {tmp_path / 'rt' / 'work'} {notebook}",  # a copy, at the notebook's path
        f"--chdir {notebook}",
        "--reuid=61003",
    ):
        assert option in text, option
    # an allow-list: the machine's root is never bound, so solutions/ (or a second
    # copy of the course anywhere else) does not exist inside
    bound = [command[i + 1] for i, arg in enumerate(command) if arg in ("--bind", "--ro-bind")]
    assert "/" not in bound and "/home" not in bound and "/root" not in bound
    assert not any(str(ROOT / "solutions").startswith(b + "/") or b == str(ROOT) for b in bound)
    # /tmp and /dev/shm of its own, each of a bounded size
    sizes = [command[i + 1] for i, arg in enumerate(command) if arg == "--size"]
    assert sizes == [str(policy.disk_bytes)] * 2 + [str(policy.memory_bytes)]
    assert command.index("--reuid=61003") > command.index("--")  # dropped inside the box
    assert sandbox.detect_level() in sandbox.LEVEL_MEANING
    assert "CANNOT" in sandbox.LEVEL_MEANING["uid"]


def test_kernel_gets_its_share_of_the_cores_and_no_gpu_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox.glob, "glob", lambda pattern: ["/dev/nvidia0", "/dev/nvidiactl"])
    shared = sandbox.Policy(level="bwrap", threads=4)
    env = sandbox.kernel_environment(shared)
    assert {env[name] for name in sandbox.THREAD_VARIABLES} == {"4"}
    assert "CUDA_VISIBLE_DEVICES" not in env and "XLA_FLAGS" not in env
    assert "--dev-bind /dev/nvidia0" in " ".join(sandbox.kernel_command(shared, "k.json", "/nb"))

    alone = sandbox.Policy(level="bwrap", threads=1, gpu=False)
    env = sandbox.kernel_environment(alone)
    assert env["OMP_NUM_THREADS"] == "1" and "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["JAX_PLATFORMS"] == "cpu"
    assert "/dev/nvidia" not in " ".join(sandbox.kernel_command(alone, "k.json", "/nb"))
    assert sandbox.kernel_environment(sandbox.Policy(level="bwrap")) == {}  # no limit asked

    # a HOME of the notebook's own, also inside bubblewrap
    own = sandbox.Policy(level="bwrap+uid", uid=60001, threads=2, home="/work/s1/runtime/home")
    env = sandbox.kernel_environment(own)
    assert env["HOME"] == "/work/s1/runtime/home" and env["OMP_NUM_THREADS"] == "2"
    # at the "uid" level no bubblewrap sets it: the variable alone gives the kernel its HOME
    alone_uid = sandbox.Policy(level="uid", uid=60001, threads=1, home="/work/s1/runtime/home")
    assert sandbox.kernel_environment(alone_uid)["HOME"] == "/work/s1/runtime/home"
    # without bubblewrap its own TMPDIR too; inside, /tmp is already its own
    tmp = "/work/s1/runtime/tmp"
    assert sandbox.kernel_environment(sandbox.Policy(level="uid", uid=60001, tmpdir=tmp)) == {
        "TMPDIR": tmp
    }
    assert "TMPDIR" not in sandbox.kernel_environment(sandbox.Policy(level="bwrap", tmpdir=tmp))
    assert "--setenv HOME /work/s1/runtime/home" in " ".join(
        sandbox.kernel_command(own, "k.json", "/nb")
    )


def test_course_config_names_the_assignments_graded_without_a_gpu(tmp_path: Path) -> None:
    (tmp_path / "nbgrader_config.py").write_text(
        'c = get_config()\nc.Grader.without_gpu = ["cnn"]\n'
    )
    cnn = Batch(tmp_path, "cnn", tmp_path / "work", workers=2, level="limits")
    simt = Batch(tmp_path, "simt", tmp_path / "work", workers=2, level="limits")
    assert cnn.gpu is False and simt.gpu is True
    assert Batch(tmp_path, "cnn", tmp_path, level="limits", gpu=True).gpu is True  # asked
    assert cnn.threads == max(1, len(os.sched_getaffinity(0)) // 2)
    # the course's own config says which of its assignments need no GPU
    assert "cnn" in course_setting(ROOT, "without_gpu", [])


def test_pythonpath_folders_are_readable_in_the_sandbox_unless_they_show_the_course(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "cluster-software"
    shared.mkdir()
    course = tmp_path / "course"
    (course / "src").mkdir(parents=True)
    monkeypatch.setenv(
        "PYTHONPATH", ":".join([str(shared), str(course), str(course / "src"), str(tmp_path)])
    )
    paths = sandbox.course_environment_paths(private=[course])
    assert str(shared.resolve()) in paths
    # the course itself, a folder inside it, and a folder holding it stay hidden
    for secret in (course, course / "src", tmp_path):
        assert str(secret.resolve()) not in paths


def test_grader_warns_when_the_kernels_packages_have_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed kernel cannot write __pycache__, so uncompiled packages cost every notebook."""
    import compileall
    import importlib

    package = tmp_path / "site" / "freshpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    importlib.invalidate_caches()
    assert sandbox.missing_bytecode(("freshpkg", "no_such_package")) == ["freshpkg"]
    monkeypatch.setattr(sandbox, "missing_bytecode", lambda: ["freshpkg"])
    (warning,) = sandbox.environment_warnings()
    assert "freshpkg have no compiled bytecode" in warning
    assert f"-m compileall -q {tmp_path / 'site'}" in warning
    monkeypatch.undo()
    assert compileall.compile_dir(str(package), quiet=1)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert sandbox.missing_bytecode(("freshpkg",)) == []


def test_memory_watcher_stops_a_process_tree_that_writes_too_much() -> None:
    import subprocess
    import sys

    from grader import memory_watch

    # a child that writes 400 MB, under a parent that uses almost nothing
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; subprocess.run([sys.executable, '-c', "
            '\'import time; x = bytearray(400 << 20); x[::4096] = b"y" * len(x[::4096]); '
            "time.sleep(60)'])",
        ]
    )
    reports = []
    try:
        policy = sandbox.Policy(level="limits", memory_bytes=200 << 20)
        memory_watch.watch(parent.pid, policy, lambda *report: reports.append(report), 0.05)
        assert parent.wait(timeout=10) == -9
    finally:
        parent.kill()
    assert len(reports) == 1 and reports[0][0] == "memory" and reports[0][1] > 200 << 20
    assert memory_watch.data_backstop(4 << 30) > 8 << 30  # room for a GPU library's reservations


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_memory_watcher_counts_a_sandbox_users_process_that_left_the_tree() -> None:
    import subprocess
    import sys
    import time

    from grader import memory_watch

    uid = processes.BASE_UID + 99
    kernel = subprocess.Popen(["sleep", "60"])  # stands in for the kernel: uses nothing
    # a daemon of the sandbox user, re-parented away from the kernel, writing 300 MB
    subprocess.run(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            sys.executable,
            "-c",
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    x = bytearray(300 << 20); x[::4096] = b'y' * len(x[::4096]); time.sleep(60)",
        ],
        check=True,
    )
    time.sleep(1)
    reports = []
    try:
        policy = sandbox.Policy(level="uid", uid=uid, memory_bytes=200 << 20)
        memory_watch.watch(kernel.pid, policy, lambda *report: reports.append(report), 0.05)
        assert kernel.wait(timeout=10) == -9
        time.sleep(0.5)
        # the daemon was killed too (it may linger as a zombie)
        assert not [pid for pid in processes.processes_of(uid) if memory_watch._running(pid)]
    finally:
        kernel.kill()
        processes.kill_user_processes(uid)
    assert len(reports) == 1 and reports[0][1] > 200 << 20


def _gradebook(path: Path) -> Path:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{path}") as gb:
        for assignment, ids in (("simt", ["a1", "a2"]), ("cnn", ["b1"])):
            gb.add_assignment(assignment)
            gb.add_notebook(assignment, assignment)
            for grade_id in ids:
                gb.add_grade_cell(grade_id, assignment, assignment, max_score=1, cell_type="code")
    return path


def _notebook(folder: Path, name: str, ids: list[str], code: str = "x = 1") -> Path:
    cells = [
        nbformat.v4.new_code_cell(
            code,
            metadata={
                "nbgrader": {"grade_id": grade_id, "grade": True, "solution": True, "points": 1}
            },
        )
        for grade_id in ids
    ]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / name)
    return folder / name


def test_check_submission_flags_and_repairs(tmp_path: Path) -> None:
    from grader.check import check_submission

    db = _gradebook(tmp_path / "gradebook.db")
    wrong = tmp_path / "wrong"
    _notebook(wrong, "simt.ipynb", ["b1"])
    assert any("looks like assignment cnn" in f for f in check_submission(wrong, "simt", db))

    partial = tmp_path / "partial"
    _notebook(partial, "simt.ipynb", ["a1"], code="from demos.simt import blocks_for")
    flags = check_submission(partial, "simt", db)
    assert "missing grade ids ['a2']" in flags
    assert any("demos.simt" in f for f in flags)

    split = tmp_path / "split"
    path = _notebook(split, "simt-1.ipynb", ["a1", "a1", "a2"])
    flags = check_submission(split, "simt", db, repair=True)
    assert any("renamed notebook simt-1.ipynb" in f for f in flags)
    assert any("duplicated grade ids ['a1']" in f for f in flags)
    repaired = nbformat.read(split / "simt.ipynb", as_version=4)
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in repaired.cells] == [
        "a1",
        None,
        "a2",
    ]
    assert not path.exists()
    assert check_submission(tmp_path / "nothing", "simt", db) == ["missing notebook simt.ipynb"]


def _bench(name: str, folder: str = "") -> dict:
    path = ROOT / "grader" / "results" / folder / f"grading-bench-{name}.json"
    return json.loads(path.read_text())


CLASS_OF_200 = ["simt", "cupy_port", "numba_distance", "multigpu", "cnn"]
ON_CPU = "-".join(CLASS_OF_200) + "-20students-2w-2cores"
ON_GPU = "-".join(CLASS_OF_200) + "-200students-16w-16cores"


def _prose(path: Path) -> str:
    import re

    return re.sub(r"\s+", " ", path.read_text())


def test_readme_grading_figures_come_from_the_recorded_benchmark() -> None:
    result = _bench(ON_CPU)
    assert result["hardware"]["cores"] == 2 and result["hardware"]["gpus"] == "none"
    runs = result["assignments"]
    readme = _prose(ROOT / "README.md")
    assert f"grader/results/grading-bench-{ON_CPU}.json" in readme
    assert f"took {result['wall_seconds']:.0f} s with {result['workers']} workers" in readme
    others = [runs[a]["serial_nbgrader_seconds_per_notebook"] for a in CLASS_OF_200[:-1]]
    assert all(abs(x - 4.5) <= 0.1 for x in others), others
    assert "against about 4.5 s per notebook" in readme
    assert f"({runs['cnn']['serial_nbgrader_seconds_per_notebook']:.1f} s for cnn)" in readme
    kinds = runs["simt"]["by_kind"]
    assert kinds["good"]["scores"] == [10.0] and kinds["partial"]["scores"] == [2.0]
    assert kinds["looping"]["scores"] == [10.0]
    assert kinds["memory"]["not_graded"] == kinds["memory"]["count"]
    assert any(f.startswith("memory: ") for f in kinds["memory"]["flags"])
    assert kinds["hostile"]["scores"] == [0.0]
    assert kinds["hostile"]["flagged"] == kinds["hostile"]["count"]
    assert "correct ones got 10/10, the partial 2/10, the looping one 10/10" in readme
    benchmarks = _prose(ROOT / "BENCHMARKS.md")
    assert f"took {result['wall_seconds']:.0f} s with 2 workers there" in benchmarks


def test_class_of_200_table_comes_from_the_recorded_benchmark() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    prose = _prose(ROOT / "BENCHMARKS.md")
    readme = _prose(ROOT / "README.md")
    result = _bench(ON_GPU)
    assert result["students"] == 200 and result["workers"] == 16
    assert result["hardware"]["cores"] == 16 and "H200" in result["hardware"]["gpus"]
    assert list(result["assignments"]) == CLASS_OF_200
    wall = result["wall_seconds"]
    for assignment, run in result["assignments"].items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {assignment} |"))
        good = run["by_kind"]["good"]
        assert f"| {good['mean_seconds']:.1f} s |" in row, row
        assert f"| {run['serial_nbgrader_seconds_per_notebook']:.1f} s |" in row, row
        assert f"| {run['notebook_seconds']:.0f} s |" in row, row
        assert ("| yes |" if run["gpu"] else "| hidden |") in row, row
        for kind, column in (("good", 6), ("partial", 7), ("hostile", 10)):
            cell = row.split("|")[column].strip()
            assert cell.split(",")[0] == "/".join(f"{s:g}" for s in run["by_kind"][kind]["scores"])
        # every notebook of a kind scored alike (one score per kind)
        assert all(len(k["scores"]) <= 1 for k in run["by_kind"].values()), run["by_kind"]
    assert f"The run took {wall:.0f} s, **{wall / 60:.1f} minutes**" in prose
    assert f"were {result['cpu_busy_percent']:.1f} % busy" in prose
    runs = result["assignments"].values()
    seconds = sum(r["notebook_seconds"] for r in runs)
    looping = [r["by_kind"]["looping"] for r in runs]
    spent = sum(k["count"] * k["mean_seconds"] for k in looping)
    assert (
        f"{sum(k['count'] for k in looping)} of the 1000, took {100 * spent / seconds:.0f} %"
        in prose
    )
    low, high = min(k["mean_seconds"] for k in looping), max(k["mean_seconds"] for k in looping)
    assert f"({low:.0f} to {high:.0f} s in all)" in prose
    alone = seconds / result["workers"]
    assert f"come to {alone:.0f} s, so {wall - alone:.0f} s went" in prose
    serial = result["estimated_serial_seconds"]
    assert f"would take {serial / 60:.0f} minutes" in prose
    assert f"is {result['speedup_vs_serial_estimate']:.1f} times faster" in prose
    assert f"with 16 workers in the strongest sandbox, took {wall / 60:.1f} minutes" in readme
    assert result["hardware"]["sandbox"] == "bwrap+uid"
    assert f"would take about {serial / 60:.0f} minutes" in readme
    cnn = result["assignments"]["cnn"]["by_kind"]["good"]["mean_seconds"]
    earlier = _bench("cnn-with-gpu-200students-16w-16cores")
    assert "H200" in earlier["hardware"]["gpus"]
    with_gpu = earlier["assignments"]["cnn"]
    gpu_seconds = with_gpu["by_kind"]["good"]["mean_seconds"]
    assert f"notebook then took {cnn:.1f} s on the 16-core host" in readme
    assert f"against {gpu_seconds:.1f} s with the GPU in an earlier run" in readme
    assert f"a correct cnn notebook took {gpu_seconds:.1f} s" in prose


@pytest.mark.parametrize("assignment", CLASS_OF_200)
def test_each_kind_scores_the_same_cell_by_cell_on_the_gpu_and_cpu_graders(assignment: str) -> None:
    on_gpu, on_cpu = _bench(ON_GPU), _bench(ON_CPU)
    assert on_gpu["hardware"]["gpus"] != "none" and on_cpu["hardware"]["gpus"] == "none"
    gpu_kinds = on_gpu["assignments"][assignment]["by_kind"]
    cpu_kinds = on_cpu["assignments"][assignment]["by_kind"]
    for kind in ("good", "partial", "looping", "hostile"):
        assert gpu_kinds[kind]["cell_scores"], kind
        assert gpu_kinds[kind]["cell_scores"] == cpu_kinds[kind]["cell_scores"], kind
    # the memory-hungry notebook is stopped on both, not graded
    assert gpu_kinds["memory"]["not_graded"] == gpu_kinds["memory"]["count"]
    assert cpu_kinds["memory"]["not_graded"] == cpu_kinds["memory"]["count"]


def test_sandbox_box_comparison_comes_from_the_recorded_benchmarks() -> None:
    """BENCHMARKS.md's before/after figures of the per-notebook box, read from their JSON."""
    prose = _prose(ROOT / "BENCHMARKS.md")
    text = (ROOT / "BENCHMARKS.md").read_text()
    cpu_before, cpu_after = _bench(ON_CPU), _bench(ON_CPU, "sandbox-box/after")
    gpu = {
        when: _bench("-".join(CLASS_OF_200) + "-40students-16w-16cores", f"sandbox-box/{when}")
        for when in ("before", "after")
    }
    assert gpu["after"]["hardware"]["gpus"] == gpu["before"]["hardware"]["gpus"] == "NVIDIA H200"
    assert f"2 workers took {cpu_after['wall_seconds']:.0f} s after" in prose
    assert f"against {cpu_before['wall_seconds']:.0f} s before" in prose
    serial = [
        r["assignments"]["simt"]["serial_nbgrader_seconds_per_notebook"]
        for r in (cpu_after, cpu_before)
    ]
    assert f"took {serial[0]:.2f} s per simt notebook against {serial[1]:.2f} s" in prose
    seconds = {
        w: sum(a["notebook_seconds"] for a in r["assignments"].values()) for w, r in gpu.items()
    }
    assert (
        f"16 workers took {gpu['after']['wall_seconds']:.0f} s after, against "
        f"{gpu['before']['wall_seconds']:.0f} s before ({seconds['after']:.0f} against "
        f"{seconds['before']:.0f} notebook-seconds, "
        f"{100 * (seconds['after'] / seconds['before'] - 1):.0f} % more)"
    ) in prose
    for assignment in CLASS_OF_200:
        before, after = (gpu[w]["assignments"][assignment]["by_kind"]["good"] for w in gpu)
        row = f"| {assignment} | {before['mean_seconds']:.1f} s | {after['mean_seconds']:.1f} s |"
        assert row in text, row
    # every kind scored cell by cell as before, on both machines
    for now, then in ((cpu_after, cpu_before), (gpu["after"], gpu["before"])):
        for assignment, run in now["assignments"].items():
            for kind, figures in run["by_kind"].items():
                earlier = then["assignments"][assignment]["by_kind"][kind]
                assert figures["cell_scores"] == earlier["cell_scores"], (assignment, kind)
