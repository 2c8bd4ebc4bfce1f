"""The kernel runner's sandbox: even a kernel the checker wrongly let through reaches nothing.

The checker (:mod:`grader.verdicts.kernel_source`) is the first wall; these
tests take it away and send the runner source of their own, as a checker
with a hole would, to show that the second wall holds: the runner is not
root, sees no process of the grader, no course file, no secret and no
variable of the instructor's shell, cannot write outside its own ``/tmp``,
and cannot take more memory than the notebook may.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from sandbox_box import notebook_box

from grader.sandbox import isolation as sandbox
from grader.sandbox import kernel as sandbox_kernel
from grader.verdicts import SECRET_VARIABLE
from grader.verdicts.kernel_runner import ALLOWED_NAMES, KernelRunner

pytestmark = pytest.mark.skipif(
    sandbox.detect_level() != "bwrap+uid",
    reason="the runner's own sandbox needs root and bubblewrap (CI has both)",
)

# Module code run when the runner defines it, as an escaped kernel would run it:
# `cuda.sys` is the simulator module's own `sys`, hence `os` and every built-in.
_PROBE = """
os, B = cuda.sys.modules["os"], cuda.sys.modules["builtins"]
found = []
found.append("uid=%d" % os.getuid())
found.append("grader=%s" % os.path.exists("/proc/%d" % GRADER_PID))
for path in (COURSE_FILE, "/proc/1/environ"):
    try:
        found.append("read=" + B.open(path).read()[:20])
    except B.OSError:
        found.append("read=refused")
try:
    B.open(COURSE_DIR + "/planted", "w").write("x")
    found.append("write=done")
except B.OSError:
    found.append("write=refused")
found.append("secret=%s" % (SECRET in os.environ))
found.append("token=%s" % ("INSTRUCTOR_TOKEN" in os.environ))
try:
    hog = B.bytearray(HOG_BYTES)
    found.append("hog=%d" % B.len(hog))
except B.MemoryError:
    found.append("hog=refused")
raise B.RuntimeError(" ".join(found))
"""


def _probe(runner: KernelRunner, course: Path, hog_bytes: int) -> str:
    source = {
        "name": "k",
        "functions": {"k": _PROBE},
        "device": [],
        "constants": {
            "GRADER_PID": os.getpid(),
            "COURSE_FILE": str(course / "solutions.ipynb"),
            "COURSE_DIR": str(course),
            "SECRET": SECRET_VARIABLE,
            "HOG_BYTES": hog_bytes,
        },
    }
    reply = runner.request(op="define", source=source, allowed=ALLOWED_NAMES)
    return reply["error"]


def test_a_kernel_past_the_checker_finds_nothing_of_the_graders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = tmp_path / "course"
    course.mkdir(mode=0o755)
    (course / "solutions.ipynb").write_text("model answers")
    monkeypatch.setenv(SECRET_VARIABLE, "the course secret")
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "ghp_not_for_students")
    with notebook_box(tmp_path) as box, KernelRunner(box.runner_command()) as runner:
        limit = box.policy.memory_bytes
        found = _probe(runner, course, hog_bytes=limit + (1 << 30)).split()
    assert found[0].startswith("RuntimeError") and found[1] == f"uid={box.policy.uid}"
    assert box.policy.uid != 0
    assert found[2:] == [
        "grader=False",  # its own process tree: the grader's /proc is not there
        "read=refused",  # the course is not in its file system
        "read=refused",
        "write=refused",
        "secret=False",
        "token=False",  # an allow-list of variables, not the instructor's shell
        "hog=refused",  # the notebook's memory limit holds its address space
    ]
    assert not (course / "planted").exists()


def test_the_kernels_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the notebook's kernel starts with: the launcher's real path, up to the exec."""
    started: dict[str, str] = {}

    def exec_instead(program: str, command: list[str]) -> None:
        started.update(os.environ)
        raise SystemExit(0)

    policy = sandbox.Policy(level="limits", threads=2)
    monkeypatch.setattr(sandbox_kernel.os, "execvp", exec_instead)
    monkeypatch.setattr(sandbox_kernel, "start_watcher", lambda *args: None)
    monkeypatch.setattr(sandbox_kernel, "apply_limits", lambda policy: None)
    monkeypatch.setenv(SECRET_VARIABLE, "the course secret")
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "ghp_not_for_students")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with monkeypatch.context() as inner:
        inner.setattr(sandbox.Policy, "load", classmethod(lambda cls, path: policy))
        with pytest.raises(SystemExit):
            sandbox_kernel.main(["policy.json", os.devnull])
    assert SECRET_VARIABLE not in started and "INSTRUCTOR_TOKEN" not in started
    assert "AWS_SECRET_ACCESS_KEY" not in started and "JPY_PARENT_PID" not in started
    assert started["CUDA_VISIBLE_DEVICES"] == "1" and started["OMP_NUM_THREADS"] == "2"
    assert started["PATH"] == os.environ["PATH"]


@pytest.mark.parametrize(
    "body",
    [
        "raise B.SystemExit(0)",  # the simulator's threads caught Exception only
        "raise B.KeyboardInterrupt",
        "hog = cuda.local.array(HUGE, np.uint8)",  # the simulator's own handler failed on it
    ],
)
def test_a_thread_that_ends_by_any_exception_fails_the_launch(tmp_path: Path, body: str) -> None:
    kernel = f'B = cuda.sys.modules["builtins"]\n@cuda.jit\ndef k(a):\n    a[0] = 1\n    {body}\n'
    source = {"name": "k", "functions": {"k": kernel}, "device": [], "constants": {"HUGE": 1 << 34}}
    with notebook_box(tmp_path) as box, KernelRunner(box.runner_command()) as runner:
        assert runner.request(op="define", source=source, allowed=ALLOWED_NAMES) == {"ok": True}
        reply = runner.request(op="launch", kernel="k", grid=[1], block=[2], args=[np.zeros(2)])
    assert "error" in reply and "ctaid" in reply["error"], reply
